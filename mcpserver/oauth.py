"""OAuth 2.1 for the MCP endpoint, on django-oauth-toolkit: tokens of users, scoped to bundles.

Eunice is the authorization server (``/o/authorize/``, ``/o/token/``, dynamic client
registration at ``/o/register/``, PKCE required; its metadata at
``/.well-known/oauth-authorization-server``) and the resource server (the protected-
resource metadata of ``/mcp/<bundle>/`` at ``/.well-known/oauth-protected-resource/mcp/<bundle>``,
named in the 401's ``WWW-Authenticate``). A desktop client registers itself, sends the
person to sign in and consent, and gets an access token for the scopes they granted:
``mcp`` (every bundle of their tenant) or ``bundle:<slug>`` (that bundle only).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any
from urllib.parse import urlsplit

from oauth2_provider.scopes import BaseScopes

EVERY_BUNDLE = "mcp"
BUNDLE_SCOPE = re.compile(r"^bundle:(\*|[a-z0-9][a-z0-9_-]{0,63})$")


class _Descriptions(dict):
    """Lists ``mcp`` (the metadata's ``scopes_supported``) and describes any bundle scope
    asked for (the consent page's lines)."""

    def __missing__(self, scope: str) -> str:
        matched = BUNDLE_SCOPE.match(scope)
        if matched is None:
            raise KeyError(scope)
        return f"Use the tools of the MCP bundle {matched.group(1)!r} of your organisation"


class BundleScopes(BaseScopes):
    """``mcp`` and, for whatever bundle a client asks for, ``bundle:<slug>``. Whether the
    bundle exists for the person's tenant is decided when the token is used (a 404 then);
    the metadata lists only ``mcp``, so no tenant's bundle names are published."""

    def get_all_scopes(self) -> dict[str, str]:
        return _Descriptions({EVERY_BUNDLE: "Use the tools of every MCP bundle of your organisation"})

    def get_available_scopes(self, application: Any = None, request: Any = None, *args: Any, **kwargs: Any) -> list:
        asked = list(getattr(request, "scopes", None) or [])
        return [EVERY_BUNDLE, *(scope for scope in asked if BUNDLE_SCOPE.match(scope))]

    def get_default_scopes(self, application: Any = None, request: Any = None, *args: Any, **kwargs: Any) -> list:
        return [EVERY_BUNDLE]


class WrongResource(Exception):
    """An access token that is not bound to the resource it was sent to (RFC 8707)."""


def user_and_scopes(token: str, resource: str) -> tuple[Any, frozenset[str]] | None:
    """The user an unexpired OAuth access token was issued to and its scopes, or None. Queries.

    The token must be bound to ``resource`` (the endpoint's URL, ``resource_of``): issued
    with that ``resource`` indicator. Raises WrongResource for a token issued for another
    resource or for none (the MCP authorization spec has clients send it, and a token
    bound to nothing could be replayed at any endpoint that trusts this server)."""
    from oauth2_provider.models import get_access_token_model

    checksum = hashlib.sha256(token.encode("utf-8")).hexdigest()
    found = get_access_token_model().objects.select_related("user").filter(token_checksum=checksum).first()
    if found is None or found.user is None or found.is_expired():
        return None
    if not found.resource:
        raise WrongResource(
            f"the token names no resource: ask the authorization server for one with resource={resource} (RFC 8707)"
        )
    if not found.allows_audience(resource):
        raise WrongResource(f"the token was issued for another resource, not {resource} (RFC 8707)")
    return found.user, frozenset(found.scope.split())


def same_resource(request_uri: str, audiences: list[str]) -> bool:
    """Whether ``request_uri`` is one of a token's ``audiences``: the same scheme, host,
    port and path, a trailing slash aside. The toolkit's resource validator
    (``RESOURCE_SERVER_TOKEN_RESOURCE_VALIDATOR``): exact, where the toolkit's default
    matches by prefix and so would let a token for ``/mcp`` reach ``/mcp/<bundle>``."""
    wanted = _canonical(request_uri)
    return wanted is not None and any(_canonical(audience) == wanted for audience in audiences)


def _canonical(uri: Any) -> tuple[str, str, int, str] | None:
    if not isinstance(uri, str):
        return None
    try:
        parts = urlsplit(uri)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower(), 0)
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname or parts.username is not None or parts.password is not None:
        return None
    return parts.scheme.lower(), parts.hostname.lower(), port, parts.path.rstrip("/")


def origin(scope: dict) -> str:
    """``scheme://host`` of the ASGI request ``scope`` (its Host was checked before)."""
    host = next((v.decode("latin-1") for k, v in scope.get("headers") or () if k == b"host"), "localhost")
    scheme = "https" if scope.get("scheme") == "https" else "http"
    return f"{scheme}://{host}"


def resource_of(scope: dict) -> str:
    """The resource identifier (RFC 8707, RFC 9728) of the endpoint ``scope`` reached:
    ``scheme://host/mcp`` or ``scheme://host/mcp/<bundle>``, as its metadata names it."""
    return f"{origin(scope)}{scope['path'].rstrip('/')}"


def resource_metadata_url(scope: dict) -> str:
    """The protected-resource metadata URL (RFC 9728) of the endpoint ``scope`` reached."""
    return f"{origin(scope)}/.well-known/oauth-protected-resource{scope['path'].rstrip('/')}"
