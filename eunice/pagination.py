"""How REST lists are paged: ``?limit=`` and ``?offset=``, checked rather than guessed.

Every list under /api/ answers ``{"count", "next", "previous", "results"}``
with at most ``DEFAULT_LIMIT`` rows unless the client asks for up to
``MAX_LIMIT``. DRF's own limit/offset paging quietly falls back to its
defaults on a value it cannot read; here a bad value is a 400 naming the
parameter, the rule and what was sent, so a client's mistake is not mistaken
for an empty or short list.
"""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.views import APIView

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


class Paging(LimitOffsetPagination):
    default_limit = DEFAULT_LIMIT
    max_limit = MAX_LIMIT

    def get_limit(self, request: Request) -> int:
        return _whole_number(request, self.limit_query_param, self.default_limit, lowest=1, highest=self.max_limit)

    def get_offset(self, request: Request) -> int:
        return _whole_number(request, self.offset_query_param, 0, lowest=0, highest=None)

    def get_schema_operation_parameters(self, view: APIView) -> list[dict]:
        """The parameters as the schema shows them, with the bounds enforced above."""
        parameters = super().get_schema_operation_parameters(view)
        _bounded(parameters, self.limit_query_param, 1, self.max_limit)
        _bounded(parameters, self.offset_query_param, 0, None)
        return parameters


def _whole_number(request: Request, name: str, default: int, *, lowest: int, highest: int | None) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    rule = f"a whole number from {lowest} to {highest}" if highest is not None else f"a whole number, {lowest} or more"
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError({name: f"must be {rule}; got {raw[:40]!r}"}) from None
    if value < lowest or (highest is not None and value > highest):
        raise ValidationError({name: f"must be {rule}; got {value}"})
    return value


def _bounded(parameters: list[dict], name: str, lowest: int, highest: int | None) -> None:
    for parameter in parameters:
        if parameter["name"] == name:
            parameter["schema"]["minimum"] = lowest
            if highest is not None:
                parameter["schema"]["maximum"] = highest
