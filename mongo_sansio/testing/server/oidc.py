"""MONGODB-OIDC on the simulated server: JWTs signed with HS256, checked as mongod checks them.

Inputs: the issuer's configuration (:class:`OidcIssuer`: the shared secret, the audience, the
issuer URL and client id it announces), each ``saslStart``/``saslContinue`` payload of a
``MONGODB-OIDC`` conversation, and the wall-clock time.  Outputs: the server payloads (an empty
one when done, the IdpInfo document for a two-step conversation's first step), the
authenticated user (the token's ``sub``) and when its authentication expires (the token's
``exp``: after it, the connection's commands fail with 391 ReauthenticationRequired, as
mongod's do); a token that is malformed, badly signed, for another audience or expired raises
:class:`~.auth.SaslFailure` (answered as error 18 AuthenticationFailed).

The signature is HMAC-SHA256 over ``header.payload`` (RFC 7515/7519), compared in constant
time (``alg: HS256``); with a JSON Web Key Set, ``alg: RS256`` tokens are verified too
(RSASSA-PKCS1-v1_5 with SHA-256, the key chosen by ``kid``).  No other algorithm (``none``
included) is accepted.  :func:`mint_hs256` makes such tokens (for tests and
``mongo-sansio sim`` users).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

import attrs

from mongo_sansio.bson import decode, encode
from mongo_sansio.testing.server.auth import SaslFailure

__all__ = ["OidcIssuer", "OidcConversation", "mint_hs256", "verify_hs256", "verify_jwt"]

MECHANISM = "MONGODB-OIDC"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def mint_hs256(claims: Mapping[str, Any], secret: str | bytes) -> str:
    """A compact JWT of ``claims`` signed with HS256 and ``secret``."""
    key = secret.encode() if isinstance(secret, str) else secret
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    body = _b64url(json.dumps(dict(claims), separators=(",", ":")).encode())
    signature = hmac.new(key, f"{header}.{body}".encode(), hashlib.sha256).digest()
    return f"{header}.{body}.{_b64url(signature)}"


def verify_hs256(token: str, secret: str | bytes, *, audience: str, now: float) -> dict[str, Any]:
    """The claims of ``token`` once its signature, audience and expiry are checked (``now``:
    wall-clock seconds); :class:`SaslFailure` naming what is wrong otherwise."""
    return verify_jwt(token, audience=audience, now=now, secret=secret)


# DER of the DigestInfo for SHA-256 (RFC 8017, section 9.2, note 1)
_SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")


def _rs256_valid(signed: bytes, signature: bytes, jwks: Mapping[str, Any], kid: Any) -> bool:
    """RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 RS256) against the JWKS's RSA keys (the one
    named ``kid`` when the token names one)."""
    keys = jwks.get("keys") if isinstance(jwks, Mapping) else None
    for key in keys if isinstance(keys, list) else []:
        if not isinstance(key, Mapping) or key.get("kty") != "RSA":
            continue
        if kid is not None and key.get("kid") != kid:
            continue
        try:
            modulus = int.from_bytes(_unb64url(str(key["n"])), "big")
            exponent = int.from_bytes(_unb64url(str(key["e"])), "big")
        except (KeyError, ValueError):
            continue
        size = (modulus.bit_length() + 7) // 8
        if len(signature) != size or modulus < 2:
            continue
        value = pow(int.from_bytes(signature, "big"), exponent, modulus)
        if value >= 1 << (8 * size):
            continue
        digest = _SHA256_DIGEST_INFO + hashlib.sha256(signed).digest()
        padding = size - 3 - len(digest)
        if padding < 8:
            continue
        expected = b"\x00\x01" + b"\xff" * padding + b"\x00" + digest
        if hmac.compare_digest(value.to_bytes(size, "big"), expected):
            return True
    return False


def verify_jwt(
    token: str,
    *,
    audience: str,
    now: float,
    secret: str | bytes | None = None,
    jwks: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The claims of ``token`` (HS256 with ``secret``, or RS256 with a key of ``jwks``) once
    its signature, audience and times are checked; :class:`SaslFailure` otherwise."""
    parts = token.split(".") if isinstance(token, str) else []
    if len(parts) != 3:
        raise SaslFailure("the token is not a compact JWT")
    try:
        header = json.loads(_unb64url(parts[0]))
        claims = json.loads(_unb64url(parts[1]))
        signature = _unb64url(parts[2])
    except (ValueError, UnicodeDecodeError):
        raise SaslFailure("the token is not a compact JWT") from None
    algorithm = header.get("alg") if isinstance(header, dict) else None
    signed = f"{parts[0]}.{parts[1]}".encode()
    if algorithm == "HS256" and secret is not None:
        key = secret.encode() if isinstance(secret, str) else secret
        valid = hmac.compare_digest(signature, hmac.new(key, signed, hashlib.sha256).digest())
    elif algorithm == "RS256" and jwks is not None:
        assert isinstance(header, dict)
        valid = _rs256_valid(signed, signature, jwks, header.get("kid"))
    else:
        accepted = " or ".join(
            name for name, given in (("HS256", secret), ("RS256", jwks)) if given is not None
        )
        raise SaslFailure(f"the token is not signed with {accepted}")
    if not valid:
        raise SaslFailure("the token's signature is wrong")
    if not isinstance(claims, dict):
        raise SaslFailure("the token's claims are not an object")
    audiences = claims.get("aud")
    if audience not in (audiences if isinstance(audiences, list) else [audiences]):
        raise SaslFailure("the token is for another audience")
    expires = claims.get("exp")
    if not isinstance(expires, int | float) or isinstance(expires, bool) or expires <= now:
        raise SaslFailure("the token has expired")
    not_before = claims.get("nbf")
    if isinstance(not_before, int | float) and not isinstance(not_before, bool) and not_before > now:
        raise SaslFailure("the token is not valid yet")
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise SaslFailure("the token has no subject")
    return claims


@attrs.frozen
class OidcIssuer:
    """The identity provider the simulated server trusts (``mongo-sansio sim --oidc-secret
    SECRET --oidc-audience AUD``)."""

    secret: str | None = attrs.field(repr=False)
    audience: str
    issuer: str = "https://simulated-idp.invalid"
    client_id: str | None = "mongo-sansio-simulator"  # None: a machine IdP (no clientId)
    request_scopes: tuple[str, ...] = ()
    #: a JSON Web Key Set whose RSA keys verify RS256 tokens (None: HS256 only)
    jwks: Mapping[str, Any] | None = attrs.field(default=None, eq=False, repr=False)

    def idp_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"issuer": self.issuer}
        if self.client_id is not None:
            info["clientId"] = self.client_id
        if self.request_scopes:
            info["requestScopes"] = list(self.request_scopes)
        return info

    def start(self, payload: bytes, wall: float) -> tuple[OidcConversation, bytes, bool]:
        """A conversation from ``saslStart``'s payload: ``{jwt}`` (one step, done) or
        ``{n?}`` (the IdpInfo comes back; the token follows in ``saslContinue``)."""
        document = _document(payload)
        conversation = OidcConversation(self, wall)
        if "jwt" in document:
            conversation.accept(document["jwt"])
            return conversation, b"", True
        principal = document.get("n")
        if principal is not None and not isinstance(principal, str):
            raise SaslFailure("the principal name must be a string")
        return conversation, encode(self.idp_info()), False


class OidcConversation:
    """One MONGODB-OIDC conversation (satisfies :class:`~.auth.SaslConversation`)."""

    def __init__(self, issuer: OidcIssuer, wall: float) -> None:
        self._issuer = issuer
        self._wall = wall
        self._user = ""
        #: the wall-clock time the authentication expires (the token's exp)
        self.expires: float | None = None

    @property
    def user(self) -> str:
        return self._user

    def accept(self, token: Any) -> None:
        if not isinstance(token, str):
            raise SaslFailure("the jwt must be a string")
        issuer = self._issuer
        claims = verify_jwt(
            token, audience=issuer.audience, now=self._wall, secret=issuer.secret, jwks=issuer.jwks
        )
        self._user = claims["sub"]
        self.expires = float(claims["exp"])

    def step(self, payload: bytes) -> tuple[bytes, bool]:
        if self._user:
            raise SaslFailure("the OIDC conversation is already complete")
        self.accept(_document(payload).get("jwt"))
        return b"", True


def _document(payload: bytes) -> dict[str, Any]:
    try:
        document = decode(payload)
    except Exception:  # noqa: BLE001 - any bad payload is the same failure
        raise SaslFailure("the MONGODB-OIDC payload is not a BSON document") from None
    return dict(document)
