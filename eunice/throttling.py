"""Rate limits on the API and the websocket, and what a locked-out login answers.

REST requests count against three DRF throttles kept in Django's cache (Redis
when REDIS_URL is set, so every process counts against the same numbers): one
rate per user, one per address for anonymous requests, and a scoped rate for
the expensive writes (``throttle_scope = "turn"`` on posting a message,
``"upload"`` on uploads). A refused request is DRF's 429 with ``Retry-After``.
The websocket's turns count against the same ``turn`` counter
(``turn_retry_after``), so a client cannot dodge the REST limit by switching
transport.

Failed logins are django-axes' (settings.AXES_*): ``lockout_response`` is what
a locked-out login page, admin login or API request gets back.
"""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from rest_framework import exceptions
from rest_framework.authentication import BasicAuthentication
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, ScopedRateThrottle, SimpleRateThrottle, UserRateThrottle

TURN_SCOPE = "turn"


class _LiveRates:
    """Reads the rate from the current settings, not from a copy taken at import
    (DRF's ``THROTTLE_RATES`` class attribute), so a changed setting takes effect."""

    scope: str | None

    def get_rate(self) -> str | None:
        rates = api_settings.DEFAULT_THROTTLE_RATES
        if self.scope not in rates:
            raise exceptions.APIException(f"no throttle rate is configured for the scope {self.scope!r}")
        return rates[self.scope]


class AnonThrottle(_LiveRates, AnonRateThrottle):
    pass


class UserThrottle(_LiveRates, UserRateThrottle):
    pass


class WriteScopedThrottle(_LiveRates, ScopedRateThrottle):
    """The view's ``throttle_scope`` rate, counted only for requests that change
    something (a GET of the same view costs no more than any other read)."""

    def allow_request(self, request: Request, view: Any) -> bool:
        if request.method in SAFE_METHODS:
            return True
        return super().allow_request(request, view)


class _TurnCounter(_LiveRates, SimpleRateThrottle):
    """The ``turn`` counter of one user, under the key WriteScopedThrottle uses for it."""

    scope = TURN_SCOPE

    def __init__(self, user_pk: Any) -> None:
        super().__init__()
        self.user_pk = user_pk

    def get_cache_key(self, request: Any, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.user_pk}


def turn_retry_after(user_pk: Any) -> int | None:
    """Count a turn the websocket is about to start against the user's ``turn`` rate.

    Returns None when it may start, else the whole seconds to wait (at least 1).
    Blocking (one cache round trip): call it off the event loop.
    """
    counter = _TurnCounter(user_pk)
    if counter.allow_request(None, None):
        return None
    return max(1, math.ceil(counter.wait() or 1))


def turn_refused_message(seconds: int) -> str:
    return (
        f"too many messages: the limit is {api_settings.DEFAULT_THROTTLE_RATES[TURN_SCOPE]}; try again in {seconds} s"
    )


def _lockout_seconds() -> int:
    return max(1, math.ceil(settings.AXES_COOLOFF_TIME.total_seconds()))


class LockoutAwareBasicAuthentication(BasicAuthentication):
    """HTTP Basic auth that answers 429 with Retry-After while django-axes refuses the
    login (the backend flags the request), not a 401 that reads as a wrong password."""

    def authenticate_credentials(self, userid: str, password: str, request: Request | None = None):  # noqa: ANN201
        try:
            return super().authenticate_credentials(userid, password, request)
        except exceptions.AuthenticationFailed:
            if request is not None and getattr(request, "axes_locked_out", False):
                raise exceptions.Throttled(wait=_lockout_seconds(), detail=_lockout_detail()) from None
            raise


def _lockout_detail() -> str:
    minutes = settings.AXES_COOLOFF_TIME.total_seconds() / 60
    return (
        f"too many failed logins for this account or address "
        f"(limit {settings.AXES_FAILURE_LIMIT}); logins are refused for {minutes:g} minutes"
    )


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict | None = None
) -> HttpResponse:
    """What django-axes answers a locked-out login with (settings.AXES_LOCKOUT_CALLABLE):
    429 and Retry-After, as JSON under /api/ and as the login page elsewhere."""
    detail = _lockout_detail()
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": detail}, status=429)
    else:
        response = render(request, "registration/locked_out.html", {"detail": detail}, status=429)
    response["Retry-After"] = str(_lockout_seconds())
    return response
