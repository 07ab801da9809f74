"""MONGODB-AWS for the simulated server: the conversation mongod has, and the check STS makes.

mongod answers the client's first payload (``{r: 32-byte nonce, p: 110}``) with a server nonce
(the client's 32 bytes and 32 of its own) and the STS host, then hands the client's signed
``GetCallerIdentity`` request to STS, which recomputes the SigV4 signature with the secret it
knows for the access key.  :class:`AwsIdentities` does both from a table of identities
(``{access key id: (secret, session token or None)}``), purely: the server's 32 random bytes
and the wall-clock time come in as arguments (``transports/sim_auth_aws.py`` draws them).

Refused, as mongod and STS refuse (:class:`~mongo_sansio.testing.server.auth.SaslFailure`, which
the server answers with error 18 AuthenticationFailed): a malformed payload, a client nonce not
32 bytes, a gs2-cb-flag other than ``n``, an unknown access key, a signature that does not
verify, a region that is not the host's, a missing signed header, an ``X-Amz-Date`` more than
15 minutes away, a session token that does not match the identity's (or one given or missing
when it should not be).  The authenticated user is the identity's ARN: ``arn:aws:iam::<account>:
user/<key>`` for long-term keys, ``arn:aws:sts::<account>:assumed-role/<role>/<key>`` for
temporary ones.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any, Final

from mongo_sansio.auth.aws import (
    CLIENT_NONCE_BYTES,
    derive_region,
    signed_headers,
    sigv4_authorization,
)
from mongo_sansio.bson import Binary, decode, encode
from mongo_sansio.errors import AuthenticationError, BSONError
from mongo_sansio.testing.server.auth import SaslFailure

__all__ = ["AwsIdentities", "AwsServerConversation", "ACCOUNT", "ROLE"]

ACCOUNT: Final = "000000000000"
ROLE: Final = "mongo-sansio-sim"
_MAX_SKEW_SECONDS: Final = 15 * 60
_REQUIRED: Final = frozenset(
    {"content-length", "content-type", "host", "x-amz-date", "x-mongodb-gs2-cb-flag",
     "x-mongodb-server-nonce"}
)


def _decode(payload: bytes) -> Mapping[str, Any]:
    try:
        document: Mapping[str, Any] = decode(bytes(payload))
    except (BSONError, ValueError) as exc:
        raise SaslFailure(f"MONGODB-AWS: the payload is not BSON: {exc}") from None
    return document


def _epoch(date: str) -> float:
    """Seconds since the epoch of an ``X-Amz-Date`` (``YYYYMMDDTHHMMSSZ``), by hand: this
    module keeps no clock and imports no time module."""
    if len(date) != 16 or date[8] != "T" or date[15] != "Z" or not (date[:8] + date[9:15]).isdigit():
        raise SaslFailure(f"MONGODB-AWS: malformed X-Amz-Date {date!r}")
    year, month, day = int(date[:4]), int(date[4:6]), int(date[6:8])
    hour, minute, second = int(date[9:11]), int(date[11:13]), int(date[13:15])
    # days from the civil date (Howard Hinnant's algorithm)
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    days = era * 146097 + doe - 719468
    return float(days * 86400 + hour * 3600 + minute * 60 + second)


class AwsServerConversation:
    """One conversation after the server's first answer (see the module docstring)."""

    def __init__(
        self,
        identities: AwsIdentities,
        server_nonce: bytes,
        host: str,
        wall_time: float,
    ) -> None:
        self._identities = identities
        self._server_nonce = server_nonce
        self._host = host
        self._wall_time = wall_time
        self._user = ""
        self._done = False

    @property
    def user(self) -> str:
        return self._user

    def step(self, payload: bytes) -> tuple[bytes, bool]:
        if self._done:
            raise SaslFailure("MONGODB-AWS: the conversation is already complete")
        self._done = True
        document = _decode(payload)
        authorization, date = document.get("a"), document.get("d")
        token = document.get("t")
        if not isinstance(authorization, str) or not isinstance(date, str):
            raise SaslFailure("MONGODB-AWS: the client's final message lacks a or d")
        if token is not None and not isinstance(token, str):
            raise SaslFailure("MONGODB-AWS: the session token is not a string")
        self._user = self._identities.verify(
            authorization, date, token, self._host, self._server_nonce, self._wall_time
        )
        return b"", True


class AwsIdentities:
    """The AWS identities a simulated deployment accepts (see the module docstring)."""

    def __init__(self, identities: Mapping[str, tuple[str, str | None]], *, host: str = "sts.amazonaws.com") -> None:
        self._identities = dict(identities)
        self.host = host

    def arn(self, access_key_id: str) -> str:
        _secret, token = self._identities[access_key_id]
        if token is None:
            return f"arn:aws:iam::{ACCOUNT}:user/{access_key_id}"
        return f"arn:aws:sts::{ACCOUNT}:assumed-role/{ROLE}/{access_key_id}"

    def start(
        self, payload: bytes, server_random: bytes, wall_time: float
    ) -> tuple[AwsServerConversation, bytes, bool]:
        """The client's first payload: check it, answer the server nonce and the STS host."""
        document = _decode(payload)
        nonce = document.get("r")
        flag = document.get("p")
        if not isinstance(nonce, bytes) or len(nonce) != CLIENT_NONCE_BYTES:
            raise SaslFailure("MONGODB-AWS: the client nonce must be 32 bytes")
        if flag != 110:
            raise SaslFailure("MONGODB-AWS: channel binding is not supported (gs2-cb-flag)")
        if len(server_random) != CLIENT_NONCE_BYTES:
            raise ValueError("the server's random part is 32 bytes")
        server_nonce = bytes(nonce) + bytes(server_random)
        reply = encode({"s": Binary(server_nonce), "h": self.host})
        return AwsServerConversation(self, server_nonce, self.host, wall_time), reply, False

    def verify(
        self,
        authorization: str,
        date: str,
        token: str | None,
        host: str,
        server_nonce: bytes,
        wall_time: float,
    ) -> str:
        """STS's check of the signed request; returns the ARN of the caller."""
        fields = _authorization_fields(authorization)
        scope = fields["Credential"].split("/")
        if len(scope) != 5 or scope[3:] != ["sts", "aws4_request"]:
            raise SaslFailure("MONGODB-AWS: malformed credential scope")
        access_key_id, day, region = scope[0], scope[1], scope[2]
        known = self._identities.get(access_key_id)
        if known is None:
            raise SaslFailure("MONGODB-AWS: the access key is unknown (InvalidClientTokenId)")
        secret, expected_token = known
        if day != date[:8]:
            raise SaslFailure("MONGODB-AWS: the credential scope's date is not X-Amz-Date's")
        try:
            host_region = derive_region(host)
        except AuthenticationError:
            raise SaslFailure("MONGODB-AWS: invalid STS host") from None
        if region != host_region:
            raise SaslFailure(f"MONGODB-AWS: region {region!r} is not the host's {host_region!r}")
        if abs(_epoch(date) - wall_time) > _MAX_SKEW_SECONDS:
            raise SaslFailure("MONGODB-AWS: the signature expired (RequestExpired)")
        if token != expected_token:
            raise SaslFailure("MONGODB-AWS: the security token is invalid")
        headers = signed_headers(host, date, server_nonce, token)
        names = fields["SignedHeaders"].split(";")
        if not _REQUIRED <= set(names) or (token is not None and "x-amz-security-token" not in names):
            raise SaslFailure("MONGODB-AWS: a required header is not signed")
        if not set(names) <= set(headers):
            raise SaslFailure("MONGODB-AWS: a signed header is unknown to the server")
        expected = sigv4_authorization(
            access_key_id=access_key_id,
            secret_access_key=secret,
            region=region,
            date=date,
            headers={name: headers[name] for name in names},
        )
        signature = _authorization_fields(expected)["Signature"]
        if not hmac.compare_digest(signature, fields["Signature"]):
            raise SaslFailure("MONGODB-AWS: the signature does not match (SignatureDoesNotMatch)")
        return self.arn(access_key_id)


def _authorization_fields(authorization: str) -> dict[str, str]:
    algorithm, _, rest = authorization.partition(" ")
    if algorithm != "AWS4-HMAC-SHA256":
        raise SaslFailure("MONGODB-AWS: the signature algorithm must be AWS4-HMAC-SHA256")
    fields: dict[str, str] = {}
    for part in rest.split(","):
        name, equals, value = part.strip().partition("=")
        if equals:
            fields[name] = value
    if not {"Credential", "SignedHeaders", "Signature"} <= set(fields):
        raise SaslFailure("MONGODB-AWS: malformed Authorization header")
    return fields
