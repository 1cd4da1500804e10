"""What every REST serializer does with bad input: say which field, which rule, what would do.

DRF's defaults answer a wrong choice with '"x" is not a valid choice.' and
drop a field it does not know without a word, so a misspelt field looks
accepted while the request silently does less than the client meant. Here a
wrong choice lists the valid ones (and the closest), and an unknown field is
a 400 that names the fields there are.
"""

from __future__ import annotations

import difflib
from typing import Any, NoReturn

from rest_framework import serializers


class NamedChoiceField(serializers.ChoiceField):
    default_error_messages = {"invalid_choice": '"{input}" is not one of: {choices}{closest}'}

    def fail(self, key: str, **kwargs: Any) -> NoReturn:
        if key == "invalid_choice":
            valid = [str(choice) for choice in self.choices]
            close = difflib.get_close_matches(str(kwargs.get("input")), valid, n=1)
            kwargs.update(choices=", ".join(valid), closest=f" (did you mean {close[0]}?)" if close else "")
        super().fail(key, **kwargs)


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not have (read-only ones are still accepted and ignored,
    so what a GET returned can be sent back), and text fields sent as anything but text."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            known = set(self.fields)
            unknown = sorted(key for key in data if key not in known)
            if unknown:
                writable = ", ".join(name for name, field in self.fields.items() if not field.read_only)
                raise serializers.ValidationError(
                    {key: [f"unknown field; the fields are: {writable}"] for key in unknown}
                )
            # DRF's CharField turns 0 or true into "0" or "True": a text field takes text only.
            not_text = {
                name: [f"must be a string; got {type(data[name]).__name__}"]
                for name, field in self.fields.items()
                if isinstance(field, serializers.CharField)
                and not field.read_only
                and data.get(name) is not None
                and not isinstance(data[name], str)
            }
            if not_text:
                raise serializers.ValidationError(not_text)
        return super().to_internal_value(data)


class StrictModelSerializer(StrictSerializer, serializers.ModelSerializer):
    serializer_choice_field = NamedChoiceField
