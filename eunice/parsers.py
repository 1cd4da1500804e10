"""The REST API's JSON parser: DRF's, with the body's size and depth checked first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.utils import json as drf_json

from eunice.jsonlimits import loads_bounded


class BoundedJSONParser(JSONParser):
    """Parses a JSON body no longer than DATA_UPLOAD_MAX_MEMORY_SIZE and no deeper than
    EUNICE_JSON_MAX_DEPTH; past either (or for invalid JSON) raises ParseError, a 400
    whose detail names the limit."""

    def parse(
        self, stream: IO[bytes], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if stream is None:
            raw = b""
        else:  # one byte past the limit is enough to know the body is too long; never read more
            raw = stream.read() if limit is None else stream.read(limit + 1)
        if limit is not None and len(raw) > limit:
            raise ParseError(
                f"the request body is longer than {limit:,} bytes, the limit (DATA_UPLOAD_MAX_MEMORY_SIZE)"
            )
        try:
            return loads_bounded(
                raw.decode(encoding),
                what="the request body",
                parse_constant=drf_json.strict_constant if self.strict else None,
            )
        except ValueError as exc:  # JSONDecodeError, JSONTooDeep, JSONTooLarge, UnicodeDecodeError
            raise ParseError(f"JSON parse error - {exc}") from None
