"""Carrying out MONGODB-OIDC's token requests (:mod:`mongo_sansio.auth.oidc_providers`).

The core decides which request and what its answer means; here each is done and its outcome
returned as a value, never raised: a user's callback called (with PyMongo's own context class
when the callback is a PyMongo ``OIDCCallback``, so a PyMongo callback sees what it expects),
a token file read (its path from the environment), a plain HTTP/1.1 GET to a metadata service
(``http.client``, with the request's timeout; named for OIDC: the AWS work has its own).

:func:`carry_out` runs in place (the blocking and gevent interpreters); the asyncio and trio
interpreters run it in a worker thread (``in_thread``), as PyMongo's async client runs its
callbacks in an executor.
"""

from __future__ import annotations

import http.client
import os
import sys
import urllib.parse
from typing import Any

from mongo_sansio.auth.oidc_providers import (
    CallbackOutcome,
    CallOidcCallback,
    FileOutcome,
    HttpOutcome,
    OidcHttpGet,
    ReadTokenFile,
)

__all__ = ["OIDC_REQUESTS", "carry_out"]

OIDC_REQUESTS = (CallOidcCallback, ReadTokenFile, OidcHttpGet)
_MAX_BODY = 1 << 20


def carry_out(request: Any) -> Any:
    """The outcome of one of :data:`OIDC_REQUESTS` (blocking)."""
    if isinstance(request, CallOidcCallback):
        return _call(request)
    if isinstance(request, ReadTokenFile):
        return _read(request)
    return _http_get(request)


def _call(request: CallOidcCallback) -> CallbackOutcome:
    callback = request.callback
    try:
        fetch = getattr(callback, "fetch", callback)  # an OIDCCallback, or a plain function
        return CallbackOutcome(result=fetch(_context_for(callback, request.context)))
    except Exception as error:  # noqa: BLE001 - the core turns it into AuthenticationError
        return CallbackOutcome(error=error)


def _context_for(callback: Any, context: Any) -> Any:
    """PyMongo's context classes for a PyMongo callback (only when PyMongo is already
    imported: it is never a dependency); ours otherwise."""
    shared = sys.modules.get("pymongo.auth_oidc_shared")
    if shared is None or not isinstance(callback, shared.OIDCCallback):
        return context
    info = context.idp_info
    if info is not None:
        info = shared.OIDCIdPInfo(
            issuer=info.issuer, clientId=info.clientId, requestScopes=info.requestScopes
        )
    return shared.OIDCCallbackContext(
        timeout_seconds=context.timeout_seconds,
        username=context.username,
        version=context.version,
        refresh_token=context.refresh_token,
        idp_info=info,
    )


def _read(request: ReadTokenFile) -> FileOutcome:
    path = next((os.environ[v] for v in request.variables if os.environ.get(v)), request.default)
    if path is None:
        names = " or ".join(request.variables)
        return FileOutcome(None, None, f"the environment variable {names} is not set")
    try:
        with open(path, encoding="utf-8") as file:
            return FileOutcome(file.read(), path)
    except (OSError, UnicodeDecodeError) as error:
        return FileOutcome(None, path, f"{path}: {error}")


def _http_get(request: OidcHttpGet) -> HttpOutcome:
    url = urllib.parse.urlsplit(request.url)
    if url.scheme != "http" or not url.hostname:
        return HttpOutcome(None, error=f"not a plain http URL: {request.url}")
    target = url.path or "/"
    if url.query:
        target += f"?{url.query}"
    connection = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=request.timeout)
    try:
        connection.request("GET", target, headers=dict(request.headers))
        response = connection.getresponse()
        return HttpOutcome(response.status, response.read(_MAX_BODY))
    except (OSError, http.client.HTTPException) as error:
        return HttpOutcome(None, error=f"{type(error).__name__}: {error}")
    finally:
        connection.close()
