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
