"""Model fields of the registry."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.db import models


class OrderedJSONField(models.TextField):
    """JSON kept as text, so key order survives every database.

    PostgreSQL's jsonb reorders object keys; a tool's input schema must reach
    the model with its properties in the order their author wrote them.
    """

    description = "JSON stored as text, key order preserved"

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> Any:
        return None if value is None else json.loads(value)

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError as exc:
                raise forms.ValidationError(f"not valid JSON: {exc.msg} at character {exc.pos}") from exc
        return value

    def get_prep_value(self, value: Any) -> str | None:
        return None if value is None else json.dumps(value, ensure_ascii=False)

    def value_to_string(self, obj: models.Model) -> str:
        return self.get_prep_value(self.value_from_object(obj)) or ""

    def formfield(self, **kwargs: Any) -> forms.Field:
        return forms.JSONField(**{"widget": forms.Textarea, **kwargs})


class SealedJSONField(models.TextField):
    """A JSON mapping of secrets, stored sealed (registry.sealing) and read back as the mapping.

    A row sealed under another SECRET_KEY reads as empty: its secrets must be set again.
    """

    description = "JSON mapping stored encrypted"

    def __init__(self, *args: Any, purpose: bytes = b"eunice.field.secret", **kwargs: Any) -> None:
        self.purpose = purpose
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> tuple:
        name, path, args, kwargs = super().deconstruct()
        kwargs["purpose"] = self.purpose
        return name, path, args, kwargs

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> Any:
        from registry.sealing import unseal

        plain = unseal(value or "", self.purpose)
        return json.loads(plain) if plain else {}

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value) if value else {}
            except json.JSONDecodeError as exc:
                raise forms.ValidationError(f"not valid JSON: {exc.msg} at character {exc.pos}") from exc
        return value

    def get_prep_value(self, value: Any) -> str:
        from registry.sealing import seal

        return seal(json.dumps(value, sort_keys=True), self.purpose) if value else ""

    def value_to_string(self, obj: models.Model) -> str:
        return ""  # a dump (dumpdata, serializers) never carries the secrets in clear

    def formfield(self, **kwargs: Any) -> forms.Field:
        return forms.JSONField(**{"widget": forms.Textarea, **kwargs})
