"""What drf-spectacular needs to know about our own API classes (imported by eunice/api_urls.py)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.authentication import BasicScheme
from drf_spectacular.extensions import OpenApiSerializerExtension
from rest_framework import serializers


class LockoutAwareBasicScheme(BasicScheme):
    """Our Basic auth is HTTP Basic in the schema (it only answers a lockout differently)."""

    target_class = "eunice.throttling.LockoutAwareBasicAuthentication"


# Every error the API answers has one of these bodies: DRF's {"detail": ...}, or
# for a rejected body or parameter, each field named with what is wrong with it.
ERROR_BODY = {
    "type": "object",
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
}
VALIDATION_BODY = {
    "type": "object",
    "description": "each rejected field or parameter, with what is wrong with it",
    "additionalProperties": {"oneOf": [{"type": "string"}, {"type": "array", "items": {}}, {"type": "object"}]},
}
_WHY = {
    "400": "a field or parameter broke a rule (each is named)",
    "401": "no credentials, or wrong ones",
    "403": "signed in, but not allowed (no tenant, not staff, or a url whose host is a private address)",
    "404": "no such object for you (another user's or tenant's answers the same)",
    "413": "the upload is larger than the upload limit",
    "415": "the body is not of the media type the operation takes",
    "422": "the url is well formed, but its host does not resolve (the schema cannot say which names do)",
    "429": "over a rate limit, or logins locked out; Retry-After says when to try again",
    "502": "the MCP server could not be reached or failed",
}


def _error(code: str) -> dict:
    component = "ValidationError" if code == "400" else "Error"
    return {
        "description": _WHY[code],
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{component}"}}},
    }


def error_responses(result: dict, generator: object, request: object, public: bool) -> dict:
    """drf-spectacular postprocessing hook: every operation lists the errors it can answer.

    Each is authenticated (401, 403) and throttled (429); one with a path parameter
    or a tenant's objects may find nothing (404); one with a body or query
    parameters validates them (400) and takes one media type (415); an upload has a size limit (413); an MCP
    server's writes may fail upstream (502), and its create and update refuse a url whose host does
    not resolve (422). A response a view documents itself
    is left as it is.
    """
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault("Error", ERROR_BODY)
    schemas.setdefault("ValidationError", VALIDATION_BODY)
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            codes = ["401", "403", "429"]
            if "{" in path or path.startswith("/api/documents/"):
                codes.append("404")
            if operation.get("requestBody") or operation.get("parameters"):
                codes.append("400")
            if operation.get("requestBody"):
                codes.append("415")
            if "multipart/form-data" in operation.get("requestBody", {}).get("content", {}):
                codes.append("413")
            if path.startswith("/api/mcp/servers/") and method in {"post", "put", "patch"}:
                codes.append("502")
                if "{" not in path or path.endswith("{id}/"):  # create and update take a url
                    codes.append("422")
            _require_a_body_with_required_fields(operation, schemas)
            responses = operation.setdefault("responses", {})
            for code in codes:
                responses.setdefault(code, _error(code))
    return result


def _require_a_body_with_required_fields(operation: dict, schemas: dict) -> None:
    """drf-spectacular marks a body required from its serializer's fields, so not a body that is
    one of several shapes (a oneOf): required when every shape has required fields."""
    for media in operation.get("requestBody", {}).get("content", {}).values():
        ref = media.get("schema", {}).get("$ref", "")
        branches = schemas.get(ref.rsplit("/", 1)[-1], {}).get("oneOf") or []
        if branches and all(schemas.get(b.get("$ref", "").rsplit("/", 1)[-1], {}).get("required") for b in branches):
            operation["requestBody"]["required"] = True


class StrictSerializerScheme(OpenApiSerializerExtension):
    """A StrictSerializer refuses fields it does not have: its schema says so."""

    target_class = "eunice.serializers.StrictSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: str) -> dict:
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        if direction == "request":
            for name, field in self.target.fields.items():
                if name in schema.get("properties", {}):
                    _add_text_patterns(field, schema["properties"][name])
        return {**schema, "additionalProperties": False}


def _add_text_patterns(field: serializers.Field, prop: dict) -> None:
    """Say what each text in ``field`` accepts: itself, a list's items, a dict's values."""
    if isinstance(field, serializers.CharField) and "pattern" not in prop:
        prop["pattern"] = text_pattern(field)
    elif isinstance(field, serializers.ListField) and isinstance(prop.get("items"), dict):
        _add_text_patterns(field.child, prop["items"])
    elif isinstance(field, serializers.DictField) and isinstance(prop.get("additionalProperties"), dict):
        _add_text_patterns(field.child, prop["additionalProperties"])


# DRF's CharField refuses a NUL character, and one that trims whitespace and may
# not be blank refuses text that is only whitespace: JSON Schema says so with a pattern.
ANY_TEXT = r"^[^\u0000]*$"
NON_BLANK_TEXT = r"^[^\u0000]*[^\s\u0000][^\u0000]*$"


def text_pattern(field: serializers.CharField) -> str:
    """The pattern of what ``field`` accepts (a field with a pattern of its own keeps it)."""
    return NON_BLANK_TEXT if field.trim_whitespace and not field.allow_blank else ANY_TEXT
