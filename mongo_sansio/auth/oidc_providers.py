"""Where MONGODB-OIDC access tokens come from: the user's callback, or a built-in environment.

Theory of operation
-------------------
Getting a token is I/O the core may not do itself (calling user code, reading a file named by
an environment variable, an HTTP request to a metadata service), so it is a request the
runtime carries out, like any other primitive of the seam:

=========================  ===========================================================
request                    the runtime's answer (never raised: failures are values)
=========================  ===========================================================
:class:`CallOidcCallback`  :class:`CallbackOutcome`: what ``callback.fetch(context)``
                           returned, or the exception it raised (blocking and gevent
                           clients call it in place; asyncio and trio in a worker thread,
                           as PyMongo's async client does)
:class:`ReadTokenFile`     :class:`FileOutcome`: the text of the file named by the first
                           of ``variables`` set in the environment (else ``default``)
:class:`OidcHttpGet`       :class:`HttpOutcome`: the status and body of a plain HTTP/1.1
                           GET of ``url`` with ``headers``, within ``timeout`` seconds
=========================  ===========================================================

The core decides everything else: which request (:func:`environment_request`), what the answer
means (:func:`token_from_environment`, :func:`read_callback_result`), and which error a failure
is (:class:`~mongo_sansio.errors.AuthenticationError` naming the source, never the token).

Built-in environments (auth spec, "Built-in OIDC Environment Integrations"):

* ``test``: the file named by ``OIDC_TOKEN_FILE``;
* ``k8s``: ``AZURE_FEDERATED_TOKEN_FILE``, else ``AWS_WEB_IDENTITY_TOKEN_FILE``, else the
  service account token ``/var/run/secrets/kubernetes.io/serviceaccount/token``;
* ``azure``: the Instance Metadata Service, ``TOKEN_RESOURCE`` as the resource and the username
  (when given) as ``client_id``; the JSON answer's ``access_token``;
* ``gcp``: the VM metadata server's identity for audience ``TOKEN_RESOURCE``; the body is the
  token.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import attrs

from mongo_sansio.errors import AuthenticationError, ConfigurationError

__all__ = [
    "CallOidcCallback",
    "CallbackOutcome",
    "ReadTokenFile",
    "FileOutcome",
    "OidcHttpGet",
    "HttpOutcome",
    "DEFAULT_ALLOWED_HOSTS",
    "host_allowed",
    "environment_request",
    "token_from_environment",
    "read_callback_result",
    "TokenResult",
]

#: ALLOWED_HOSTS when the user gives none (auth spec, MONGODB-OIDC mechanism properties).
DEFAULT_ALLOWED_HOSTS: Final = (
    "*.mongodb.net",
    "*.mongodb-qa.net",
    "*.mongodb-dev.net",
    "*.mongodbgov.net",
    "localhost",
    "127.0.0.1",
    "::1",
    "*.mongo.com",
)

K8S_DEFAULT_TOKEN_FILE: Final = "/var/run/secrets/kubernetes.io/serviceaccount/token"
AZURE_IMDS_URL: Final = "http://169.254.169.254/metadata/identity/oauth2/token"
GCP_METADATA_URL: Final = (
    "http://metadata/computeMetadata/v1/instance/service-accounts/default/identity"
)
# An error message quotes at most this much of what a service answered.
_QUOTED_BODY: Final = 500


@attrs.frozen
class CallOidcCallback:
    """Call ``callback.fetch(context)`` (a user's machine or human callback).  ``timeout``:
    the seconds it was given (``context.timeout_seconds``); a runtime that can stop waiting
    for it (asyncio, trio) answers a :class:`TimeoutError` outcome after that."""

    callback: Any = attrs.field(eq=False)
    context: Any = attrs.field(eq=False)
    timeout: float | None = None


@attrs.frozen
class CallbackOutcome:
    """What the callback returned (``result``), or the exception it raised (``error``)."""

    result: Any = None
    error: BaseException | None = None


@attrs.frozen
class ReadTokenFile:
    """Read the file named by the first of ``variables`` set (non-empty) in the environment,
    else ``default`` (None: it is an error that none is set)."""

    variables: tuple[str, ...]
    default: str | None = None


@attrs.frozen
class FileOutcome:
    """The file's text, or why it could not be read (``error``), and the path tried."""

    text: str | None
    path: str | None
    error: str | None = None


@attrs.frozen
class OidcHttpGet:
    """A plain HTTP GET of ``url`` with ``headers``, answered within ``timeout`` seconds."""

    url: str
    headers: tuple[tuple[str, str], ...]
    timeout: float


@attrs.frozen
class HttpOutcome:
    """The answer's ``status`` and ``body``, or (status None) why there was none."""

    status: int | None
    body: bytes = b""
    error: str | None = None


@attrs.frozen
class TokenResult:
    """A token source's answer, checked: the access token and the optional extras."""

    access_token: str
    expires_in_seconds: float | None = None
    refresh_token: str | None = None


_UNRESERVED: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def quote(text: str) -> str:
    """RFC 3986 percent-encoding of a query value (every byte but the unreserved ones)."""
    return "".join(
        chr(byte) if byte in _UNRESERVED else f"%{byte:02X}" for byte in text.encode("utf-8")
    )


def host_allowed(host: str, allowed: Any) -> bool:
    """Whether ``host`` (no port) matches one of the ALLOWED_HOSTS patterns; ``*.`` matches
    any (nested) subdomain."""
    host = host.lower().rstrip(".")
    for pattern in allowed:
        pattern = str(pattern).lower()
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]):
                return True
        elif host == pattern:
            return True
    return False


def environment_request(
    environment: str, *, token_resource: str | None, username: str | None, timeout: float
) -> ReadTokenFile | OidcHttpGet:
    """The request that fetches a token in the built-in ``environment``."""
    if environment == "test":
        return ReadTokenFile(("OIDC_TOKEN_FILE",))
    if environment == "k8s":
        return ReadTokenFile(
            ("AZURE_FEDERATED_TOKEN_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE"), K8S_DEFAULT_TOKEN_FILE
        )
    resource = quote(token_resource or "")
    if environment == "azure":
        url = f"{AZURE_IMDS_URL}?api-version=2018-02-01&resource={resource}"
        if username:
            url += f"&client_id={quote(username)}"
        headers = (("Accept", "application/json"), ("Metadata", "true"))
        return OidcHttpGet(url, headers, timeout)
    if environment == "gcp":
        url = f"{GCP_METADATA_URL}?audience={resource}"
        return OidcHttpGet(url, (("Metadata-Flavor", "Google"),), timeout)
    raise ConfigurationError(f"MONGODB-OIDC: unknown ENVIRONMENT {environment!r}")


def token_from_environment(environment: str, outcome: Any) -> TokenResult:
    """The token in the runtime's answer to :func:`environment_request`."""
    where = f"MONGODB-OIDC ENVIRONMENT {environment}"
    if isinstance(outcome, FileOutcome):
        if outcome.error is not None or outcome.text is None:
            raise AuthenticationError(f"{where}: cannot read the token file: {outcome.error}")
        token = outcome.text.strip()
        if not token:
            raise AuthenticationError(f"{where}: the token file {outcome.path} is empty")
        return TokenResult(token)
    if not isinstance(outcome, HttpOutcome):
        raise AuthenticationError(f"{where}: no answer from the runtime")
    if outcome.status is None:
        raise AuthenticationError(f"{where}: the metadata request failed: {outcome.error}")
    body = outcome.body.decode("utf-8", "replace")
    if outcome.status != 200:
        raise AuthenticationError(
            f"{where}: the metadata service answered HTTP {outcome.status}: {body[:_QUOTED_BODY]}"
        )
    if environment == "gcp":
        token = body.strip()
        if not token:
            raise AuthenticationError(f"{where}: the metadata service answered no token")
        return TokenResult(token)
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    access = answer.get("access_token") if isinstance(answer, Mapping) else None
    if not isinstance(access, str) or not access:
        raise AuthenticationError(
            f"{where}: the metadata service's answer has no access_token: {body[:_QUOTED_BODY]}"
        )
    expires = answer.get("expires_in") if isinstance(answer, Mapping) else None
    try:
        expires_in = None if expires is None else float(expires)
    except (TypeError, ValueError):
        expires_in = None
    return TokenResult(access, expires_in)


def read_callback_result(outcome: Any, *, human: bool) -> TokenResult:
    """The token a callback returned: an ``OIDCCallbackResult`` (ours, PyMongo's, or any
    object with those attributes).  None, a missing or empty access token, a negative expiry
    are :class:`~mongo_sansio.errors.AuthenticationError`; so is an exception the callback
    raised (chained)."""
    kind = "OIDC_HUMAN_CALLBACK" if human else "OIDC_CALLBACK"
    if not isinstance(outcome, CallbackOutcome):
        raise AuthenticationError(f"MONGODB-OIDC: {kind} was not called")
    if outcome.error is not None:
        error = outcome.error
        raise AuthenticationError(
            f"MONGODB-OIDC: {kind} raised {type(error).__name__}: {error}"
        ) from error
    result = outcome.result
    if result is None:
        raise AuthenticationError(f"MONGODB-OIDC: {kind} returned None, not an OIDCCallbackResult")
    token = _attribute(result, "access_token")
    if not isinstance(token, str) or not token:
        raise AuthenticationError(
            f"MONGODB-OIDC: {kind} returned {type(result).__name__} without an access_token "
            "(it must return an OIDCCallbackResult)"
        )
    expires = _attribute(result, "expires_in_seconds")
    if expires is not None:
        if isinstance(expires, bool) or not isinstance(expires, int | float):
            seconds = getattr(expires, "total_seconds", None)  # a timedelta
            if not callable(seconds):
                raise AuthenticationError(f"MONGODB-OIDC: {kind}'s expires_in_seconds is not a number")
            expires = seconds()
        if expires < 0:
            raise AuthenticationError(f"MONGODB-OIDC: {kind} returned a negative expires_in_seconds")
    refresh = _attribute(result, "refresh_token")
    if refresh is not None and not isinstance(refresh, str):
        raise AuthenticationError(f"MONGODB-OIDC: {kind}'s refresh_token is not a string")
    return TokenResult(token, None if expires is None else float(expires), refresh or None)


def _attribute(result: Any, name: str) -> Any:
    if isinstance(result, Mapping):  # a plain dict is taken too: the same names as keys
        return result.get(name)
    return getattr(result, name, None)
