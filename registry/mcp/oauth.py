"""OAuth 2.1 for MCP servers, on the SDK's client (``mcp.client.auth.OAuthClientProvider``).

The SDK does the protocol: discovery from a 401 (RFC 9728, RFC 8414 and OIDC), PKCE,
the ``resource`` parameter, scope selection and step-up, the ``iss`` checks, Client ID
Metadata Documents, Dynamic Client Registration and refresh. Eunice adds what a
server-side, multi-process product needs around it:

- ``GrantStore``: the SDK's TokenStorage on ``MCPOAuthGrant`` rows, sealed at rest, one
  per server, owner (the tenant or one user) and issuer, with the authorization server's
  metadata kept beside the tokens so a refresh after a restart reaches the right server;
- ``EuniceOAuth``: the provider, plus one refresh at a time across processes (a lease
  claimed by a conditional update) and a limit on scope step-ups;
- the person's part, one of three ``Flow``s: the browser (Eunice's callback view hands the
  code back through an ``MCPOAuthRequest`` row), no person at all (a tool call: the
  caller gets the connect link instead), or a headless one that follows the
  authorization server's redirect itself (the conformance client, tests).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from registry.mcp import MCPError
from registry.models import MCP_OAUTH_REQUEST_SECONDS

CALLBACK_PATH = "/mcp-oauth/callback/"
CLIENT_METADATA_PATH = "/mcp-oauth/client-metadata.json"
CLIENT_NAME = "Eunice"
AUTHORIZE_WAIT = float(MCP_OAUTH_REQUEST_SECONDS)  # how long a person may take at the authorization server
REFRESH_MARGIN = 60  # seconds before its expiry a token is refreshed
REFRESH_LEASE = 30.0  # seconds one process may hold the refresh of a grant
MAX_STEP_UPS = 2  # scope step-ups in a row before a 403 insufficient_scope is given up
POLL = 0.25  # seconds between looks at a row another process writes


class AuthorizationRequired(MCPError):
    """The connection needs a person to authorize Eunice at the server's authorization
    server; ``connect_url`` is Eunice's page that starts it."""

    def __init__(self, message: str, connect_url: str) -> None:
        super().__init__(message)
        self.connect_url = connect_url


# --- Eunice's addresses --------------------------------------------------------------


LOCAL_ORIGIN = "http://localhost:8000"  # without EUNICE_PUBLIC_URL: scripts/run's own address


def public_url(path: str) -> str:
    """``path`` on Eunice's public origin (EUNICE_PUBLIC_URL; ``LOCAL_ORIGIN`` without one)."""
    return (settings.EUNICE_PUBLIC_URL or LOCAL_ORIGIN).rstrip("/") + path


def callback_url() -> str:
    return public_url(CALLBACK_PATH)


def client_metadata_url() -> str | None:
    """Eunice's Client ID Metadata Document URL; None unless Eunice is served over HTTPS
    (an authorization server only accepts an https client id)."""
    url = public_url(CLIENT_METADATA_PATH)
    return url if url.startswith("https://") else None


def connect_url(server_id: int) -> str:
    return public_url(f"/mcp-oauth/{server_id}/connect/")


def client_metadata(redirect_uri: str | None = None) -> Any:
    from mcp.shared.auth import OAuthClientMetadata
    from pydantic import AnyUrl

    return OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[AnyUrl(redirect_uri or callback_url())],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )


def client_metadata_document() -> dict:
    """What Eunice serves at its client metadata URL: its client id is that URL."""
    document = client_metadata().model_dump(mode="json", exclude_none=True)
    return {"client_id": client_metadata_url() or public_url(CLIENT_METADATA_PATH), **document}


def preregistered_client(credentials: Mapping[str, str]) -> Any:
    """The SDK's client record of credentials staff registered by hand (``client_id``, and
    ``client_secret`` and ``issuer`` when there are): sent with HTTP Basic when there is a secret."""
    from mcp.shared.auth import OAuthClientInformationFull

    secret = credentials.get("client_secret") or None
    return OAuthClientInformationFull(
        client_id=credentials["client_id"],
        client_secret=secret,
        token_endpoint_auth_method="client_secret_basic" if secret else "none",
        issuer=credentials.get("issuer") or None,
    )


# --- where grants live ---------------------------------------------------------------

ANY_USER = -1  # the listing connection of a per-user server: any user's grant will do


def _in_thread(func: Any, *args: Any) -> Any:
    """``func(*args)`` in a worker thread: the database is never touched on the MCP loop."""

    def run() -> Any:
        try:
            return func(*args)
        finally:
            close_old_connections()

    return asyncio.to_thread(run)


class GrantStore:
    """The SDK's TokenStorage for one connection: ``server_id`` and its owner (``user_id``
    None for the tenant connection). ``preregistered``: credentials staff registered by
    hand (``client_id``, ``client_secret``, ``issuer``)."""

    def __init__(self, server_id: int, user_id: int | None, preregistered: Mapping[str, str] | None = None) -> None:
        self.server_id, self.user_id = server_id, user_id
        self._preregistered = dict(preregistered or {})
        self._issuer: str | None = None
        self._claimed: int | None = None  # the row whose refresh lease this store holds
        self._lent_by: int | None = None  # ANY_USER: the user whose grant is in use

    def _rows(self) -> Any:
        from registry.models import MCPOAuthGrant

        if self.user_id == ANY_USER and self._lent_by is None:
            return MCPOAuthGrant.objects.filter(server_id=self.server_id, user__isnull=False)
        return MCPOAuthGrant.objects.owned_by(self.server_id, self._owner())

    def _owner(self) -> int | None:
        """Whose grant this store reads and writes: the tenant's (None), one user's, or for
        ANY_USER the user whose grant it found first (and keeps to, refreshes included)."""
        return self._lent_by if self.user_id == ANY_USER else self.user_id

    def _current(self) -> Any:
        rows = self._rows()
        if self._issuer is not None:
            rows = rows.filter(issuer=self._issuer)
        row = rows.order_by("-updated_at").first()
        if row is not None and self.user_id == ANY_USER:
            self._lent_by = row.user_id
        return row

    # The SDK's TokenStorage.
    async def get_tokens(self) -> Any:
        return await _in_thread(self._get_tokens)

    def _get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        row = self._current()
        if row is None or not row.tokens.get("access_token"):
            return None
        self._issuer = row.issuer
        tokens = dict(row.tokens)
        if row.expires_at is not None:  # what is left of it, less the margin: refreshed before it ends
            tokens["expires_in"] = max(0, int((row.expires_at - timezone.now()).total_seconds()) - REFRESH_MARGIN)
        return OAuthToken.model_validate(tokens)

    async def set_tokens(self, tokens: Any) -> None:
        await _in_thread(self._set_tokens, tokens)

    def _set_tokens(self, tokens: Any) -> None:
        row = self._row_for(self._issuer if self._issuer is not None else self._preregistered.get("issuer", ""))
        row.tokens = tokens.model_dump(mode="json", exclude_none=True)
        row.scope = tokens.scope or ""
        row.expires_at = timezone.now() + timedelta(seconds=tokens.expires_in) if tokens.expires_in else None
        row.refreshing_until = None
        row.save()

    async def get_client_info(self) -> Any:
        return await _in_thread(self._get_client_info)

    def _get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        if self._preregistered.get("client_id"):
            return preregistered_client(self._preregistered)
        row = self._current()
        if row is None or not row.client.get("info"):
            return None
        self._issuer = row.issuer
        return OAuthClientInformationFull.model_validate(row.client["info"])

    async def set_client_info(self, client_info: Any) -> None:
        await _in_thread(self._set_client_info, client_info)

    def _set_client_info(self, client_info: Any) -> None:
        self._issuer = client_info.issuer or ""
        row = self._row_for(self._issuer)
        row.client = {**row.client, "info": client_info.model_dump(mode="json", exclude_none=True)}
        row.save()

    # Eunice's additions.
    async def server_metadata(self) -> dict | None:
        row = await _in_thread(self._current)
        return row.client.get("server_metadata") if row is not None else None

    async def remember_server_metadata(self, metadata: Any) -> None:
        def remember() -> None:
            row = self._current()
            if row is not None:
                row.client = {**row.client, "server_metadata": metadata.model_dump(mode="json", exclude_none=True)}
                row.save(update_fields=["client", "updated_at"])

        await _in_thread(remember)

    def _row_for(self, issuer: str) -> Any:
        from registry.models import MCPOAuthGrant

        owner = self._owner()
        if self.user_id == ANY_USER and owner is None:
            raise MCPError("a per-user server's listing connection only borrows a user's grant")
        row, _ = MCPOAuthGrant.objects.get_or_create(server_id=self.server_id, user=_user(owner), issuer=issuer)
        return row

    async def claim_refresh(self) -> bool:
        """True when this process may refresh the grant now (no other holds the lease)."""

        def claim() -> bool:
            from django.db.models import Q

            row = self._current()
            if row is None:
                return True
            now = timezone.now()
            free = Q(refreshing_until__isnull=True) | Q(refreshing_until__lt=now)
            until = now + timedelta(seconds=REFRESH_LEASE)
            if self._rows().filter(free, pk=row.pk).update(refreshing_until=until) != 1:
                return False
            self._claimed = row.pk
            return True

        return await _in_thread(claim)

    async def release_refresh(self) -> None:
        claimed, self._claimed = self._claimed, None
        if claimed is not None:
            await _in_thread(lambda: self._rows().filter(pk=claimed).update(refreshing_until=None))

    async def wait_for_refresh(self) -> None:
        """Until the process holding the refresh lease let it go (at most the lease)."""
        deadline = time.monotonic() + REFRESH_LEASE
        while time.monotonic() < deadline:
            row = await _in_thread(self._current)
            if row is None or row.refreshing_until is None or row.refreshing_until < timezone.now():
                return
            await asyncio.sleep(POLL)


def _user(user_id: int | None) -> Any:
    from django.contrib.auth import get_user_model

    return None if user_id is None else get_user_model()(pk=user_id)


class MemoryStore:
    """TokenStorage in memory, for a run that keeps nothing (the conformance client)."""

    def __init__(self, preregistered: Mapping[str, str] | None = None) -> None:
        self._tokens: Any = None
        self._client: Any = None
        self._preregistered = dict(preregistered or {})

    async def get_tokens(self) -> Any:
        return self._tokens

    async def set_tokens(self, tokens: Any) -> None:
        self._tokens = tokens

    async def get_client_info(self) -> Any:
        if self._client is None and self._preregistered.get("client_id"):
            self._client = preregistered_client(self._preregistered)
        return self._client

    async def set_client_info(self, client_info: Any) -> None:
        self._client = client_info


# --- revoking at the authorization server ----------------------------------------------------

REVOKE_TIMEOUT = 10.0


def revoke_at_server(grant: Any, preregistered: Mapping[str, str], *, allow_private: bool) -> str:
    """Ask the authorization server to revoke ``grant``'s refresh token (or its access token)
    at its revocation endpoint (RFC 7009), authenticating as the client did at the token
    endpoint. Returns "" when it agreed or has no such endpoint, else why not: Eunice
    forgets the grant either way."""
    metadata = grant.client.get("server_metadata") or {}
    endpoint = metadata.get("revocation_endpoint")
    info = grant.client.get("info") or ({**preregistered} if preregistered.get("client_id") else {})
    token = grant.tokens.get("refresh_token") or grant.tokens.get("access_token")
    if not endpoint or not info.get("client_id") or not token:
        return ""
    hint = "refresh_token" if grant.tokens.get("refresh_token") else "access_token"
    data = {"token": token, "token_type_hint": hint, "client_id": info["client_id"]}
    secret = info.get("client_secret")
    # The first way the server lists for its revocation endpoint that Eunice can do, else
    # the way the client authenticates at the token endpoint.
    usable = ("client_secret_post", "client_secret_basic")
    listed = [m for m in metadata.get("revocation_endpoint_auth_methods_supported") or () if m in usable]
    method = listed[0] if listed else info.get("token_endpoint_auth_method") or "client_secret_basic"
    basic = None
    if secret and method == "client_secret_basic":
        basic = (info["client_id"], secret)
    elif secret:
        data["client_secret"] = secret
    try:
        return asyncio.run(_post_revocation(endpoint, data, basic, allow_private))
    except MCPError as exc:
        return str(exc)


async def _post_revocation(endpoint: str, data: dict, basic: tuple | None, allow_private: bool) -> str:
    import httpx2

    from registry.mcp.http import pinned_client
    from registry.mcp.urls import check_url

    checked = await asyncio.to_thread(check_url, endpoint, allow_private=allow_private)
    try:
        async with pinned_client(checked, None) as client:
            response = await asyncio.wait_for(client.post(endpoint, data=data, auth=basic), REVOKE_TIMEOUT)
    except (httpx2.HTTPError, TimeoutError) as exc:
        return f"the revocation endpoint did not answer: {type(exc).__name__}"
    return (
        ""
        if response.status_code == 200
        else f"the revocation endpoint answered HTTP {response.status_code}: {response.text[:200]}"
    )


# --- the provider ----------------------------------------------------------------------


def _insufficient_scope(response: Any) -> bool:
    from mcp.client.auth.utils import extract_field_from_www_auth

    return response.status_code == 403 and extract_field_from_www_auth(response, "error") == "insufficient_scope"


def provider(server_url: str, store: Any, flow: Flow, *, metadata_url: str | None = None) -> Any:
    """The SDK's OAuth provider for one connection, with Eunice's additions (see the module)."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthMetadata

    class EuniceOAuth(OAuthClientProvider):
        step_ups = 0

        async def _initialize(self) -> None:
            await super()._initialize()
            tokens = self.context.current_tokens
            if tokens is not None and tokens.expires_in is not None:
                # The SDK keeps no expiry for stored tokens: without one it would never
                # refresh them, and an expired token would send a person back to authorize.
                self.context.update_token_expiry(tokens)
            if self.context.oauth_metadata is None and hasattr(store, "server_metadata"):
                known = await store.server_metadata()
                if known:
                    self.context.oauth_metadata = OAuthMetadata.model_validate(known)

        async def _handle_token_response(self, response: Any) -> None:
            await super()._handle_token_response(response)
            if self.context.oauth_metadata is not None and hasattr(store, "remember_server_metadata"):
                await store.remember_server_metadata(self.context.oauth_metadata)

        async def _refresh_first(self) -> bool:
            """Whether this process holds the refresh lease for this request: a token due
            for refresh is refreshed by one process; the others wait and read its tokens."""
            async with self.context.lock:
                if not self._initialized:
                    await self._initialize()
                if self.context.is_token_valid() or not self.context.can_refresh_token():
                    return False
                if not hasattr(store, "claim_refresh"):
                    return False
                await self._initialize()  # another process may have refreshed it already
                if self.context.is_token_valid():
                    return False
                if await store.claim_refresh():
                    return True
                await store.wait_for_refresh()
                await self._initialize()
                return False

        async def async_auth_flow(self, request: Any) -> Any:
            claimed = await self._refresh_first()
            flow = super().async_auth_flow(request)
            answers = 0  # to the request itself: the first may start a step-up, a retry's may not
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    if outgoing is request:
                        answers += 1
                        if response.status_code < 400:
                            self.step_ups = 0
                        elif answers == 1 and _insufficient_scope(response):
                            self.step_ups += 1
                            if self.step_ups > MAX_STEP_UPS:
                                return  # the 403 stands: no further authorization for it
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()
                if claimed:
                    await store.release_refresh()

    return EuniceOAuth(
        server_url,
        client_metadata(flow.redirect_uri),
        store,
        redirect_handler=flow.redirect,
        callback_handler=flow.callback,
        client_metadata_url=metadata_url,
    )


# --- the person's part -------------------------------------------------------------------


class Flow:
    """Where the authorization URL goes and where the code comes back from."""

    redirect_uri: str | None = None  # None: Eunice's callback URL
    client_metadata_url: str | None = None  # None: Eunice's own (client_metadata_url())

    async def redirect(self, url: str) -> None:
        raise NotImplementedError

    async def callback(self) -> Any:
        raise NotImplementedError


class NoPerson(Flow):
    """A call with nobody at a browser: a needed authorization ends it, with the link."""

    def __init__(self, server_id: int, server_name: str) -> None:
        self.server_id, self.server_name = server_id, server_name

    async def redirect(self, url: str) -> None:
        raise AuthorizationRequired(
            f"MCP server {self.server_name!r} needs your authorization: open {connect_url(self.server_id)}",
            connect_url(self.server_id),
        )


class BrowserFlow(Flow):
    """A person at a browser: the URL is handed to the view that sends them there, and the
    code comes back through Eunice's callback view (any process) as an MCPOAuthRequest row."""

    def __init__(self, server_id: int, user_id: int, for_tenant: bool, redirect_uri: str | None = None) -> None:
        self.server_id, self.user_id, self.for_tenant = server_id, user_id, for_tenant
        self.redirect_uri = redirect_uri
        self.url = ""
        self.state = ""
        self.ready = threading.Event()

    async def redirect(self, url: str) -> None:
        from registry.models import MCPOAuthRequest

        self.state = (parse_qs(urlsplit(url).query).get("state") or [""])[0]

        def record() -> None:
            MCPOAuthRequest.objects.expired().delete()  # abandoned at the authorization server
            MCPOAuthRequest.objects.create(
                state=self.state, server_id=self.server_id, user_id=self.user_id, for_tenant=self.for_tenant
            )

        await _in_thread(record)
        self.url = url
        self.ready.set()

    async def callback(self) -> Any:
        from mcp.client.auth import AuthorizationCodeResult, OAuthFlowError

        from registry.models import MCPOAuthRequest

        deadline = time.monotonic() + AUTHORIZE_WAIT
        while time.monotonic() < deadline:
            row = await _in_thread(lambda: MCPOAuthRequest.objects.filter(state=self.state, answered=True).first())
            if row is not None:
                await _in_thread(row.delete)
                if row.error or not row.code:
                    raise OAuthFlowError(f"the authorization server refused: {row.error or 'no code'}")
                return AuthorizationCodeResult(code=row.code, state=row.state, iss=row.iss or None)
            await asyncio.sleep(POLL)
        raise OAuthFlowError(f"nobody finished authorizing within {AUTHORIZE_WAIT:g} s")


class FollowRedirect(Flow):
    """No browser: ask the authorization endpoint and read the code off its redirect, as the
    conformance suite's clients do (its authorization server approves at once). The request
    goes through a client from ``client_factory`` (checked and pinned as the connection's)."""

    # A native client's loopback redirect URI: nothing listens there, the code is read off
    # the authorization server's Location header.
    redirect_uri = "http://localhost:3000/callback"

    def __init__(self, client_factory: Any, client_metadata_url: str | None = None) -> None:
        self._client_factory = client_factory
        self.client_metadata_url = client_metadata_url
        self._result: Any = None

    async def redirect(self, url: str) -> None:
        from mcp.client.auth import AuthorizationCodeResult, OAuthFlowError

        async with self._client_factory() as client:
            response = await client.get(url)
        location = response.headers.get("location", "")
        if response.status_code not in (301, 302, 303, 307, 308) or not location:
            raise OAuthFlowError(f"the authorization endpoint answered HTTP {response.status_code}, not a redirect")
        query = parse_qs(urlsplit(location).query)
        first = {key: values[0] for key, values in query.items()}
        if "code" not in first:
            raise OAuthFlowError(f"the authorization server refused: {first.get('error', 'no code')}")
        self._result = AuthorizationCodeResult(code=first["code"], state=first.get("state"), iss=first.get("iss"))

    async def callback(self) -> Any:
        return self._result
