"""What drf-spectacular needs to know about our own API classes (imported by eunice/api_urls.py)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.authentication import BasicScheme
from drf_spectacular.extensions import OpenApiSerializerExtension


class LockoutAwareBasicScheme(BasicScheme):
    """Our Basic auth is HTTP Basic in the schema (it only answers a lockout differently)."""

    target_class = "eunice.throttling.LockoutAwareBasicAuthentication"


# Every error the API answers has one of these bodies: DRF's {"detail": ...}, or
# for a rejected body or parameter, each field named with what is wrong with it.
ERROR_BODY = {
    "type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"],
}
VALIDATION_BODY = {
    "type": "object",
    "description": "each rejected field or parameter, with what is wrong with it",
    "additionalProperties": {"oneOf": [{"type": "string"}, {"type": "array", "items": {}}, {"type": "object"}]},
}
_WHY = {
    "400": "a field or parameter broke a rule (each is named)",
    "401": "no credentials, or wrong ones",
    "403": "signed in, but not allowed (no tenant, or not staff)",
    "404": "no such object for you (another user's or tenant's answers the same)",
    "413": "the upload is larger than the upload limit",
    "415": "the body is not of the media type the operation takes",
    "429": "over a rate limit, or logins locked out; Retry-After says when to try again",
    "502": "the MCP server could not be reached or failed",
}


def _error(code: str) -> dict:
    component = "ValidationError" if code == "400" else "Error"
    return {"description": _WHY[code], "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{component}"}}}}


def error_responses(result: dict, generator: object, request: object, public: bool) -> dict:
    """drf-spectacular postprocessing hook: every operation lists the errors it can answer.

    Each is authenticated (401, 403) and throttled (429); one with a path parameter
    or a tenant's objects may find nothing (404); one with a body or query
    parameters validates them (400) and takes one media type (415); an upload has a size limit (413); an MCP
    server's writes may fail upstream (502). A response a view documents itself
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
            responses = operation.setdefault("responses", {})
            for code in codes:
                responses.setdefault(code, _error(code))
    return result


class StrictSerializerScheme(OpenApiSerializerExtension):
    """A StrictSerializer refuses fields it does not have: its schema says so."""

    target_class = "eunice.serializers.StrictSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: str) -> dict:
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        return {**schema, "additionalProperties": False}
