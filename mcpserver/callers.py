"""Who is calling the MCP endpoint: an API token (or an OAuth access token) → a user → their tenant.

Never anonymous. A machine sends the REST API's token (``Authorization: Token KEY`` or
``Bearer KEY``: ``rest_framework.authtoken``, the same row the REST API accepts); a
person's desktop client sends an OAuth access token this server issued
(mcpserver/oauth.py), scoped to bundles and bound to the endpoint's URL. The user must be active and belong to a
tenant; the bundle must be that tenant's and enabled, and within the token's scopes.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from eunice.throttling import UserThrottle
from mcpserver.models import Bundle
from mcpserver.oauth import EVERY_BUNDLE, WrongResource, user_and_scopes
from mcpserver.served import Caller
from registry.tenancy import tenant_of


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request gets no tools: its HTTP status and the sentence that says why."""

    status: int
    message: str


def identify(authorization: str, bundle: str, resource: str) -> Caller | Refusal:
    """The caller an ``Authorization`` header names, for ``bundle`` ("" for every tool) at
    the endpoint URL ``resource``, which an OAuth access token must be bound to. Queries."""
    scheme, _, credential = authorization.strip().partition(" ")
    credential = credential.strip()
    if scheme.lower() not in ("bearer", "token") or not credential:
        return Refusal(401, "authentication required: send `Authorization: Bearer <API token or access token>`")
    found = _user_of_api_token(credential)
    scopes: frozenset[str] | None = None
    if found is None:
        try:
            granted = user_and_scopes(credential, resource)
        except WrongResource as exc:
            return Refusal(401, str(exc))
        if granted is not None:
            found, scopes = granted
    if found is None or not found.is_active:
        return Refusal(401, "the token is not valid (unknown, revoked or expired)")
    tenant_id = tenant_of(found)
    if not tenant_id:
        return Refusal(403, "this user belongs to no tenant, so there are no tools to serve")
    if scopes is not None and EVERY_BUNDLE not in scopes and f"bundle:{bundle or '*'}" not in scopes:
        return Refusal(403, f"the token's scopes do not include this bundle (scope `bundle:{bundle or '*'}`)")
    names: frozenset[str] | None = None
    instructions = ""
    if bundle:
        row = Bundle.objects.served(tenant_id, bundle)
        if row is None:
            return Refusal(404, f"no bundle {bundle!r} is served to this tenant")
        names, instructions = row.names(), row.description
    principal = f"user:{found.pk}" if scopes is None else f"user:{found.pk}:oauth"
    return Caller(str(found.pk), tenant_id, bundle, names, principal, instructions)


def within_rate(user_id: str) -> bool:
    """Whether the user may make another request now: the REST API's per-user rate and counter."""
    user = SimpleNamespace(pk=user_id, is_authenticated=True)
    return UserThrottle().allow_request(SimpleNamespace(user=user), None)  # type: ignore[arg-type]


def _user_of_api_token(key: str):  # noqa: ANN202 (a User, or None)
    from rest_framework.authtoken.models import Token

    token = Token.objects.select_related("user").filter(key=key).first()
    return token.user if token is not None else None
