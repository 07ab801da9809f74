"""MONGODB-AWS: the SASL conversation and the AWS Signature Version 4 it carries (auth spec).

Inputs: 32 random bytes (the client nonce, drawn by the adapter), the server's first payload,
the :class:`AwsCredentials` to sign with and the wall-clock time (seconds since the epoch, for
``X-Amz-Date``).  Outputs: the two client payloads (BSON documents as bytes):

* client first: ``{r: client nonce, p: 110}`` (gs2-cb-flag ``n``: no channel binding);
* client final: ``{a: Authorization header, d: X-Amz-Date[, t: session token]}`` -- the
  SigV4 signature of the ``sts:GetCallerIdentity`` POST the server replays to STS, over the
  headers ``content-length``, ``content-type``, ``host`` (the server's ``h``), ``x-amz-date``,
  ``x-amz-security-token`` (temporary credentials only), ``x-mongodb-gs2-cb-flag`` and
  ``x-mongodb-server-nonce`` (the server nonce in base64).

Checks on the server's first payload, each an :class:`~mongo_sansio.errors.AuthenticationError`
with ``code`` None (we refused the server): the server nonce is exactly 64 bytes and starts
with ours; the STS host is 1 to 255 bytes with no empty label (no ``..``, no leading or
trailing period).  The region comes from the host: ``us-east-1`` for ``sts.amazonaws.com`` or
a host without a period, the second label otherwise.

:func:`sigv4_authorization` is also what the simulator uses to check a signature as STS
would (recomputed from the secret it knows).  Nothing here keeps time or draws randomness.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
from collections.abc import Mapping
from typing import Any, Final

import attrs

from mongo_sansio.bson import Binary, decode, encode
from mongo_sansio.errors import AuthenticationError, BSONError, ConfigurationError

__all__ = [
    "AwsCredentials",
    "AwsConversation",
    "CLIENT_NONCE_BYTES",
    "STS_BODY",
    "derive_region",
    "check_sts_host",
    "sigv4_authorization",
    "amz_date",
]

MECHANISM: Final = "MONGODB-AWS"
CLIENT_NONCE_BYTES: Final = 32
SERVER_NONCE_BYTES: Final = 64
GS2_CB_FLAG: Final = 110  # ord("n")
#: the body of the signed GetCallerIdentity request (43 bytes)
STS_BODY: Final = b"Action=GetCallerIdentity&Version=2011-06-15"
CONTENT_TYPE: Final = "application/x-www-form-urlencoded"
_ALGORITHM: Final = "AWS4-HMAC-SHA256"
_SERVICE: Final = "sts"


@attrs.frozen(repr=False)
class AwsCredentials:
    """An access key id, its secret, and for temporary credentials a session token and the
    wall-clock time (epoch seconds) they expire at.  The secret and token never show."""

    access_key_id: str
    secret_access_key: str
    session_token: str | None = None
    expiration: float | None = None

    def __repr__(self) -> str:
        token = None if self.session_token is None else "<hidden>"
        return (
            f"AwsCredentials(access_key_id={self.access_key_id!r}, secret_access_key=<hidden>, "
            f"session_token={token}, expiration={self.expiration!r})"
        )

    __str__ = __repr__


def check_sts_host(host: object) -> str:
    """``host`` if it is a valid STS host name by the spec's rules; AuthenticationError if not."""
    if not isinstance(host, str):
        raise AuthenticationError(f"{MECHANISM}: the server sent no STS host")
    size = len(host.encode("utf-8", "surrogatepass"))
    if not 0 < size <= 255:
        raise AuthenticationError(f"{MECHANISM}: the STS host must be 1 to 255 bytes long")
    if "" in host.split("."):
        raise AuthenticationError(f"{MECHANISM}: the STS host {host!r} has an empty label")
    return host


def derive_region(host: str) -> str:
    """The AWS region of a (valid) STS host, by the spec's Region Calculation."""
    host = check_sts_host(host)
    if host == "sts.amazonaws.com" or "." not in host:
        return "us-east-1"
    return host.split(".")[1]


def amz_date(wall_time: float) -> str:
    """``X-Amz-Date`` for ``wall_time`` (epoch seconds): ``YYYYMMDDTHHMMSSZ`` in UTC."""
    moment = datetime.datetime.fromtimestamp(wall_time, datetime.UTC)
    return moment.strftime("%Y%m%dT%H%M%SZ")


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def signed_headers(
    host: str, date: str, server_nonce: bytes, session_token: str | None
) -> dict[str, str]:
    """The headers the GetCallerIdentity request carries, lower-case names (all signed)."""
    headers = {
        "content-length": str(len(STS_BODY)),
        "content-type": CONTENT_TYPE,
        "host": host,
        "x-amz-date": date,
        "x-mongodb-gs2-cb-flag": "n",
        "x-mongodb-server-nonce": base64.b64encode(server_nonce).decode("ascii"),
    }
    if session_token is not None:
        headers["x-amz-security-token"] = session_token
    return headers


def sigv4_authorization(
    *,
    access_key_id: str,
    secret_access_key: str,
    region: str,
    date: str,
    headers: Mapping[str, str],
    body: bytes = STS_BODY,
    method: str = "POST",
    path: str = "/",
    service: str = _SERVICE,
) -> str:
    """The SigV4 ``Authorization`` header value for a request with no query string, signing
    every header of ``headers`` (lower-case names)."""
    names = sorted(headers)
    canonical_headers = "".join(f"{name}:{' '.join(headers[name].split())}\n" for name in names)
    signed = ";".join(names)
    canonical_request = "\n".join(
        [method, path, "", canonical_headers, signed, hashlib.sha256(body).hexdigest()]
    )
    day = date[:8]
    scope = f"{day}/{region}/{service}/aws4_request"
    string_to_sign = "\n".join(
        [_ALGORITHM, date, scope, hashlib.sha256(canonical_request.encode("utf-8")).hexdigest()]
    )
    key = _hmac(("AWS4" + secret_access_key).encode("utf-8"), day)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    return (
        f"{_ALGORITHM} Credential={access_key_id}/{scope}, SignedHeaders={signed}, "
        f"Signature={signature}"
    )


class AwsConversation:
    """The client side of one MONGODB-AWS conversation (see the module docstring)."""

    def __init__(self, nonce: bytes) -> None:
        if not isinstance(nonce, bytes | bytearray) or len(nonce) != CLIENT_NONCE_BYTES:
            raise ConfigurationError(
                f"{MECHANISM}: the client nonce must be {CLIENT_NONCE_BYTES} random bytes"
            )
        self._nonce = bytes(nonce)
        self._server_nonce: bytes | None = None
        self._host: str | None = None

    def __repr__(self) -> str:
        return f"<AwsConversation host={self._host!r}>"

    def client_first(self) -> bytes:
        return encode({"r": Binary(self._nonce), "p": GS2_CB_FLAG})

    def handle_server_first(self, payload: bytes) -> None:
        """Check the server's nonce and STS host (AuthenticationError if either is wrong)."""
        try:
            document: Mapping[str, Any] = decode(bytes(payload))
        except (BSONError, ValueError) as exc:
            raise AuthenticationError(f"{MECHANISM}: the server's payload is not BSON") from exc
        server_nonce = document.get("s")
        if not isinstance(server_nonce, bytes) or len(server_nonce) != SERVER_NONCE_BYTES:
            raise AuthenticationError(
                f"{MECHANISM}: the server nonce must be {SERVER_NONCE_BYTES} bytes"
            )
        if not hmac.compare_digest(server_nonce[:CLIENT_NONCE_BYTES], self._nonce):
            raise AuthenticationError(
                f"{MECHANISM}: the server nonce does not start with the client nonce"
            )
        self._host = check_sts_host(document.get("h"))
        self._server_nonce = bytes(server_nonce)

    def client_final(self, credentials: AwsCredentials, wall_time: float) -> bytes:
        """The signed answer (call after :meth:`handle_server_first`)."""
        if self._server_nonce is None or self._host is None:
            raise AuthenticationError(f"{MECHANISM}: the server's first message is missing")
        date = amz_date(wall_time)
        headers = signed_headers(self._host, date, self._server_nonce, credentials.session_token)
        authorization = sigv4_authorization(
            access_key_id=credentials.access_key_id,
            secret_access_key=credentials.secret_access_key,
            region=derive_region(self._host),
            date=date,
            headers=headers,
        )
        document: dict[str, Any] = {"a": authorization, "d": date}
        if credentials.session_token is not None:
            document["t"] = credentials.session_token
        return encode(document)
