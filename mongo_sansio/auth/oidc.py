"""MONGODB-OIDC: the callback types, the client's token cache, and the conversation as a flow.

Theory of operation
-------------------
One :class:`OidcCache` per client (the spec's *Client Cache*: the latest access token, and for
a human callback the refresh token and the IdP's information); one :class:`OidcAuthenticator`
per connection (the *Connection Cache*: the token it authenticated with).  The authenticator
satisfies :class:`~mongo_sansio.connection.establish.AuthenticatorLike`:

* :meth:`OidcAuthenticator.speculative_document` -- a one-step ``saslStart`` with the cached
  token for hello's ``speculativeAuthenticate`` (None without one; never a callback call);
* :meth:`OidcAuthenticator.flow` -- done when the speculative reply says ``done``; else the
  machine flow (cached token, one-step; error 18 invalidates it and fetches a new one) or the
  human flow (cached token, then the refresh token, then the two-step conversation asking the
  server for its IdpInfo);
* :meth:`OidcAuthenticator.reauthenticate` -- after a ReauthenticationRequired (391): the
  connection's token is invalidated in the client cache and the flow runs again, without hello
  and without speculation.

The flows yield :class:`~mongo_sansio.flow.ConnectionCommand` requests (saslStart,
saslContinue on ``$external``) and, to get a token, the requests of
:mod:`~mongo_sansio.auth.oidc_providers` plus :class:`~mongo_sansio.client.runtime.Wait`,
:class:`~mongo_sansio.flow.Now` and :class:`~mongo_sansio.flow.Sleep`: one token source call at
a time per client (others wait for its signal and take its token), at least 100 ms apart.  The
client's lock (threads) or loop (async) guards the cache between two steps; nothing is held
while a command is in flight.

Callback types: :class:`OIDCCallback`, :class:`OIDCCallbackContext`,
:class:`OIDCCallbackResult`, :class:`OIDCIdPInfo` have PyMongo's names and attributes; a
PyMongo callback object works unchanged (its result is read by attribute).
"""

from __future__ import annotations

import abc
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs

from mongo_sansio._numbers import whole_number
from mongo_sansio.auth.oidc_providers import (
    DEFAULT_ALLOWED_HOSTS,
    CallOidcCallback,
    TokenResult,
    environment_request,
    host_allowed,
    read_callback_result,
    token_from_environment,
)
from mongo_sansio.bson import Binary, decode, encode
from mongo_sansio.errors import AuthenticationError, ConfigurationError, command_succeeded
from mongo_sansio.flow import ConnectionCommand, Now, Sleep
from mongo_sansio.uri.credential import Credential

if TYPE_CHECKING:
    from mongo_sansio.client.runtime import Signal

__all__ = [
    "OIDCCallback",
    "OIDCCallbackContext",
    "OIDCCallbackResult",
    "OIDCIdPInfo",
    "OidcCache",
    "OidcAuthenticator",
    "MECHANISM",
    "REAUTHENTICATION_REQUIRED",
]

MECHANISM: Final = "MONGODB-OIDC"
REAUTHENTICATION_REQUIRED: Final = 391
AUTHENTICATION_FAILED: Final = 18
CALLBACK_VERSION: Final = 1
MACHINE_CALLBACK_TIMEOUT: Final = 60.0
HUMAN_CALLBACK_TIMEOUT: Final = 300.0
TIME_BETWEEN_CALLS: Final = 0.1

AuthFlow = Generator[Any, Any, None]


@attrs.define
class OIDCIdPInfo:
    """What the server says of its identity provider (the two-step conversation)."""

    issuer: str
    clientId: str | None = None  # noqa: N815 - the spec's and PyMongo's name
    requestScopes: list[str] | None = None  # noqa: N815


@attrs.define
class OIDCCallbackContext:
    """What a callback is given: its time limit, the username, the API version, and for a
    human callback the IdP information and the cached refresh token."""

    timeout_seconds: float
    username: str
    version: int
    refresh_token: str | None = None
    idp_info: OIDCIdPInfo | None = None


@attrs.define
class OIDCCallbackResult:
    """What a callback returns: the access token, and optionally its lifetime and a refresh
    token (human flow)."""

    access_token: str
    expires_in_seconds: float | None = None
    refresh_token: str | None = None


class OIDCCallback(abc.ABC):
    """A token source given as ``authMechanismProperties={"OIDC_CALLBACK": callback}`` (or
    ``OIDC_HUMAN_CALLBACK``).  PyMongo's ``pymongo.auth_oidc.OIDCCallback`` objects work too."""

    @abc.abstractmethod
    def fetch(self, context: OIDCCallbackContext) -> OIDCCallbackResult:
        """Return an access token for ``context``, within ``context.timeout_seconds``."""


class OidcCache:
    """The *Client Cache*: one per client, shared by every connection's authenticator."""

    def __init__(self) -> None:
        self.access_token: str | None = None
        self.refresh_token: str | None = None
        self.idp_info: OIDCIdPInfo | None = None
        self.last_call: float | None = None  # monotonic time of the last token source call
        self.fetching = False
        self._waiters: list[Signal] = []

    def waiter(self, signal: Signal) -> Signal:
        """Register ``signal`` to be fired when the token source call in progress ends."""
        self._waiters.append(signal)
        return signal

    def fetched(self) -> None:
        """The token source call ended (with a token or not): wake every waiter."""
        self.fetching = False
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.fire()

    def invalidate(self, token: str | None) -> None:
        """Forget ``token`` if it is still the cached one (a newer token stays)."""
        if token is not None and self.access_token == token:
            self.access_token = None

    def __repr__(self) -> str:
        return f"OidcCache(access_token={'<hidden>' if self.access_token else None})"


def _payload(document: Mapping[str, Any]) -> Binary:
    return Binary(encode(document))


def _sasl_start(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {"saslStart": 1, "mechanism": MECHANISM, "payload": _payload(payload)}


def _failed_code(reply: Any) -> int | None:
    """None for a success; the server's code (0 when it gave none) for a failure."""
    if not isinstance(reply, Mapping):
        raise AuthenticationError(f"{MECHANISM}: the server's reply is malformed")
    if command_succeeded(reply):
        return None
    return whole_number(reply.get("code")) or 0


def _raise_failure(reply: Mapping[str, Any]) -> None:
    code = whole_number(reply.get("code"))
    errmsg = reply.get("errmsg")
    message = f"{MECHANISM} authentication failed"
    if isinstance(errmsg, str) and errmsg:
        message += f": {errmsg[:500]}"
    if code is not None:
        name = reply.get("codeName")
        message += f" (code {code}{', ' + name if isinstance(name, str) and name else ''})"
    raise AuthenticationError(message, code=code)


class OidcAuthenticator:
    """Authenticates one connection with MONGODB-OIDC (see the module docstring)."""

    def __init__(
        self,
        credential: Credential,
        cache: OidcCache,
        *,
        host: str,
        timeout: float | None = None,
    ) -> None:
        """``host``: the server's host name (ALLOWED_HOSTS); ``timeout``: the seconds left
        for the connection's establishment (connectTimeoutMS), None for none."""
        properties = credential.mechanism_properties
        self._credential = credential
        self._cache = cache
        self._host = host
        self._timeout = timeout
        self._callback = properties.get("OIDC_CALLBACK")
        self._human_callback = properties.get("OIDC_HUMAN_CALLBACK")
        self._environment = properties.get("ENVIRONMENT")
        if self._callback is None and self._human_callback is None and self._environment is None:
            raise ConfigurationError(f"{MECHANISM} needs ENVIRONMENT or a callback")
        self._allowed = properties.get("ALLOWED_HOSTS", DEFAULT_ALLOWED_HOSTS)
        #: the *Connection Cache*: the token this connection authenticated with
        self.connection_token: str | None = None
        self._speculative_token: str | None = None

    def __repr__(self) -> str:
        return f"OidcAuthenticator(host={self._host!r}, username={self._credential.username!r})"

    @property
    def credential(self) -> Credential:
        return self._credential

    @property
    def human(self) -> bool:
        return self._human_callback is not None

    def _check_host(self) -> None:
        if self.human and not host_allowed(self._host, self._allowed):
            raise ConfigurationError(
                f"{MECHANISM}: refusing to authenticate to {self._host}, which is not in "
                f"ALLOWED_HOSTS {list(self._allowed)}"
            )

    # -- hello ----------------------------------------------------------------------------------

    def speculative_document(self) -> dict[str, Any] | None:
        self._check_host()
        token = self._cache.access_token
        if token is None:
            return None
        self._speculative_token = token
        return {**_sasl_start({"jwt": token}), "db": self._credential.source}

    def flow(
        self,
        *,
        sasl_supported_mechs: Any = None,
        speculative_reply: Mapping[str, Any] | None = None,
    ) -> AuthFlow:
        self._check_host()
        if (
            self._speculative_token is not None
            and isinstance(speculative_reply, Mapping)
            and speculative_reply.get("done") is True
        ):
            self.connection_token = self._speculative_token
            return
        self.connection_token = None
        yield from self._authenticate()

    def reauthenticate(self) -> AuthFlow:
        """The conversation again after a 391, on the same connection (no hello)."""
        self._check_host()
        self._cache.invalidate(self.connection_token)
        self.connection_token = None
        yield from self._authenticate()

    # -- the flows ------------------------------------------------------------------------------

    def _authenticate(self) -> AuthFlow:
        if self.human:
            yield from self._human_flow()
        else:
            yield from self._machine_flow()

    def _command(self, body: Mapping[str, Any]) -> ConnectionCommand:
        return ConnectionCommand(db=self._credential.source, body=body)

    def _one_step(self, token: str) -> Generator[Any, Any, Mapping[str, Any]]:
        self.connection_token = token
        reply = yield self._command(_sasl_start({"jwt": token}))
        if not isinstance(reply, Mapping):
            raise AuthenticationError(f"{MECHANISM}: the server's reply is malformed")
        return reply

    def _machine_flow(self) -> AuthFlow:
        cache = self._cache
        token = cache.access_token
        if token is not None:
            reply = yield from self._one_step(token)
            code = _failed_code(reply)
            if code is None:
                return
            if code != AUTHENTICATION_FAILED:
                _raise_failure(reply)
            cache.invalidate(token)
        token = yield from self._fetch(None, None)
        reply = yield from self._one_step(token)
        code = _failed_code(reply)
        if code is not None:
            if code == AUTHENTICATION_FAILED:
                cache.invalidate(token)
            _raise_failure(reply)

    def _human_flow(self) -> AuthFlow:
        cache = self._cache
        # each turn consumes a cached token, so this ends after at most three
        for _ in range(3):
            token = cache.access_token
            if token is not None:
                reply = yield from self._one_step(token)
                code = _failed_code(reply)
                if code is None:
                    return
                if code != AUTHENTICATION_FAILED:
                    _raise_failure(reply)
                cache.invalidate(token)
                self.connection_token = None
                continue
            if cache.refresh_token is not None and cache.idp_info is not None:
                refresh = cache.refresh_token
                token = yield from self._fetch(cache.idp_info, refresh)
                reply = yield from self._one_step(token)
                code = _failed_code(reply)
                if code is None:
                    return
                if code != AUTHENTICATION_FAILED:
                    _raise_failure(reply)
                if cache.refresh_token == refresh:
                    cache.refresh_token = None
                cache.invalidate(token)
                self.connection_token = None
                continue
            break
        yield from self._two_step()

    def _two_step(self) -> AuthFlow:
        username = self._credential.username
        principal = {"n": username} if username else {}
        reply = yield self._command(_sasl_start(principal))
        if _failed_code(reply) is not None:
            _raise_failure(reply)
        idp_info = _idp_info(reply)
        self._cache.idp_info = idp_info
        token = yield from self._fetch(idp_info, None, fresh=True)
        self.connection_token = token
        reply = yield self._command(
            {
                "saslContinue": 1,
                "conversationId": reply.get("conversationId"),
                "payload": _payload({"jwt": token}),
            }
        )
        code = _failed_code(reply)
        if code is not None:
            if code == AUTHENTICATION_FAILED:
                self._cache.invalidate(token)
            _raise_failure(reply)

    # -- getting a token ------------------------------------------------------------------------

    def _fetch(
        self, idp_info: OIDCIdPInfo | None, refresh_token: str | None, *, fresh: bool = False
    ) -> Generator[Any, Any, str]:
        """A token from the source, one call at a time per client; a token another
        connection cached meanwhile is taken instead (not with ``fresh``: a new two-step
        conversation needs the callback's answer to this IdpInfo)."""
        # (imported here: mongo_sansio.client imports this module while it loads)
        from mongo_sansio.client.runtime import Signal, Wait

        cache = self._cache
        while cache.fetching:
            yield Wait(cache.waiter(Signal("OIDC token")), None)
        if cache.access_token is not None and not fresh:
            return cache.access_token
        cache.fetching = True
        try:
            now = yield Now()
            if cache.last_call is not None and now - cache.last_call < TIME_BETWEEN_CALLS:
                yield Sleep(TIME_BETWEEN_CALLS - (now - cache.last_call))
                now = yield Now()
            cache.last_call = now
            result = yield from self._call_source(idp_info, refresh_token)
            cache.access_token = result.access_token
            if self.human:
                cache.refresh_token = result.refresh_token
            return result.access_token
        finally:
            cache.fetched()

    def _call_source(
        self, idp_info: OIDCIdPInfo | None, refresh_token: str | None
    ) -> Generator[Any, Any, TokenResult]:
        username = self._credential.username
        if self.human:
            timeout = HUMAN_CALLBACK_TIMEOUT
        else:
            timeout = MACHINE_CALLBACK_TIMEOUT if self._timeout is None else self._timeout
        if self._environment is not None:
            environment = str(self._environment)
            request = environment_request(
                environment,
                token_resource=self._credential.mechanism_properties.get("TOKEN_RESOURCE"),
                username=username,
                timeout=timeout,
            )
            outcome = yield request
            return token_from_environment(environment, outcome)
        context = OIDCCallbackContext(
            timeout_seconds=timeout,
            username=username or "",
            version=CALLBACK_VERSION,
            refresh_token=refresh_token,
            idp_info=idp_info,
        )
        callback = self._human_callback if self.human else self._callback
        outcome = yield CallOidcCallback(callback, context, timeout)
        return read_callback_result(outcome, human=self.human)


def _idp_info(reply: Mapping[str, Any]) -> OIDCIdPInfo:
    payload = reply.get("payload")
    try:
        document = decode(bytes(payload)) if isinstance(payload, bytes | bytearray) else None
    except Exception:  # noqa: BLE001 - any decoding failure is the same malformed answer
        document = None
    issuer = document.get("issuer") if isinstance(document, Mapping) else None
    if not isinstance(issuer, str) or not isinstance(document, Mapping):
        raise AuthenticationError(f"{MECHANISM}: the server's IdpInfo is malformed")
    client_id = document.get("clientId")
    scopes = document.get("requestScopes")
    return OIDCIdPInfo(
        issuer=issuer,
        clientId=client_id if isinstance(client_id, str) else None,
        requestScopes=[str(s) for s in scopes] if isinstance(scopes, list) else None,
    )
