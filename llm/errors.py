"""Typed provider errors whose messages are safe to show a user or a model.

Retry policy: the SDK itself retries rate limits (429), overload (529), other
5xx, 408/409 and connection failures ``settings.LLM_MAX_RETRIES`` times with
exponential backoff (0.5 s doubling to 8 s, honouring ``retry-after``) before
one of these is raised. ``retryable`` then tells the caller whether trying
the turn again later may help; nothing here retries a second time. A failure
after the stream has started is never retried by the SDK.

Messages never carry the API key (it is redacted even if a server echoes it),
headers or a traceback.
"""

from __future__ import annotations

from typing import Any


class LLMError(Exception):
    """Base class. ``str(error)`` is the safe, user-facing message."""

    kind = "error"
    retryable = False

    def __init__(self, message: str, *, status: int | None = None, request_id: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.request_id = request_id


class LLMConfigError(LLMError):
    """The role's model cannot be built (unknown provider, bad row)."""

    kind = "config"


class RoleOffline(LLMConfigError):
    """The role has no model that can be called: it would answer from the offline provider
    (no key, no row). ``str(error)`` says why."""


class LLMAuthError(LLMError):
    """The key was refused (401) or lacks permission (403)."""

    kind = "auth"


class LLMRateLimitError(LLMError):
    """Too many requests or tokens for the account (429)."""

    kind = "rate_limit"
    retryable = True


class LLMOverloadedError(LLMError):
    """The provider is overloaded or failing (529, 5xx)."""

    kind = "overloaded"
    retryable = True


class LLMBadRequestError(LLMError):
    """The request was refused as malformed or too large (400, 404, 413, 422): a bug, not a blip."""

    kind = "bad_request"


class LLMConnectionError(LLMError):
    """The provider could not be reached or timed out."""

    kind = "connection"
    retryable = True


class LLMResponseError(LLMError):
    """The provider answered with something we could not read (e.g. broken tool JSON)."""

    kind = "response"


class LLMContextTooLongError(LLMBadRequestError):
    """The request is longer than the model's context window ("prompt is too long").

    ``prompt_tokens`` is the provider's count of the refused request, when it
    said (the loop calibrates its estimate from it), ``limit`` its maximum.
    """

    kind = "context_too_long"

    def __init__(
        self, message: str, *, prompt_tokens: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(message, **kwargs)
        self.prompt_tokens = prompt_tokens
        self.limit = limit
