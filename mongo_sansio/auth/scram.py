"""The client side of SCRAM (RFC 5802, RFC 7677) as MongoDB speaks it, with no I/O.

Inputs: the mechanism, user name, password and a client nonce (printable text the caller drew
from a random source: the core draws none), then the server's two messages as bytes.  Outputs:
the client's two messages as bytes, and a verdict on the server: every fault in what the
server sent (a nonce that does not extend ours, fewer than 4096 iterations, a malformed
message, an ``e=`` error, a server signature that does not match) raises
:class:`~mongo_sansio.errors.AuthenticationError` with ``code`` None, and nothing else.

A :class:`ScramClient` is a staged object that moves forward only::

    client_first() -> handle_server_first(bytes) -> client_final() -> handle_server_final(bytes)

Calling a step out of order raises :class:`~mongo_sansio.errors.InvalidOperation`.

MongoDB's departures from the RFCs (source/auth/auth.md): user names are never SASLprep'd;
SCRAM-SHA-1 derives its keys from MongoDB's password digest, the hex MD5 of
``"<user>:mongo:<password>"``, not from the password itself; SCRAM-SHA-256 uses the SASLprep'd
password.  Channel binding is never offered (``n,,``).

:class:`ScramCache` keeps the expensive part (PBKDF2, the RFC's ``Hi``) between conversations:
its entries, the client and server keys as the auth spec allows, are found by mechanism, salt,
iteration count and a digest of the prepared password, so another password never matches.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections import OrderedDict
from typing import Final, Literal

import attrs

from mongo_sansio.auth.saslprep import saslprep
from mongo_sansio.errors import AuthenticationError, ConfigurationError, InvalidOperation

__all__ = [
    "MIN_ITERATIONS",
    "SCRAM_MECHANISMS",
    "ScramCache",
    "ScramClient",
    "ScramKeys",
    "ScramMechanism",
    "mongodb_password_digest",
]

ScramMechanism = Literal["SCRAM-SHA-1", "SCRAM-SHA-256"]
SCRAM_MECHANISMS: Final = ("SCRAM-SHA-1", "SCRAM-SHA-256")

#: The auth spec's floor: a lower count from the server is a downgrade attempt.
MIN_ITERATIONS: Final = 4096
# pbkdf2_hmac takes a C int; a server asking for more is not a server we can satisfy.
_MAX_ITERATIONS: Final = 2**31 - 1

_HASH_NAMES: Final = {"SCRAM-SHA-1": "sha1", "SCRAM-SHA-256": "sha256"}
# "c=" of the client-final message: base64 of the GS2 header "n,," (no channel binding).
_CHANNEL_BINDING: Final = b"c=biws"
_GS2_HEADER: Final = b"n,,"


def mongodb_password_digest(username: str, password: str) -> str:
    """MongoDB's SCRAM-SHA-1 password: hex MD5 of ``"<username>:mongo:<password>"``."""
    text = f"{username}:mongo:{password}"
    return hashlib.md5(_utf8(text, "the user name and password"), usedforsecurity=False).hexdigest()


def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigurationError(
            f"{what} must be valid Unicode text (no lone surrogates)"
        ) from None


def _printable_nonce(nonce: str) -> bool:
    # RFC 5802 "printable": %x21-2B / %x2D-7E, i.e. visible ASCII except the comma.
    return bool(nonce) and all(0x21 <= ord(char) <= 0x7E and char != "," for char in nonce)


@attrs.frozen
class ScramKeys:
    """The keys a salted password yields: ``ClientKey`` and ``ServerKey`` (RFC 5802 3)."""

    client_key: bytes = attrs.field(repr=False)
    server_key: bytes = attrs.field(repr=False)


def _derive_keys(
    mechanism: ScramMechanism, password: bytes, salt: bytes, iterations: int
) -> ScramKeys:
    hash_name = _HASH_NAMES[mechanism]
    salted = hashlib.pbkdf2_hmac(hash_name, password, salt, iterations)
    return ScramKeys(
        client_key=hmac.digest(salted, b"Client Key", hash_name),
        server_key=hmac.digest(salted, b"Server Key", hash_name),
    )


class ScramCache:
    """Keys already derived, so a new connection skips PBKDF2 (the auth spec's SCRAM cache).

    An entry is keyed by the mechanism, the salt, the iteration count and a SHA-256 digest of
    the prepared password; the password itself is not kept.  At most ``max_entries`` are held,
    the least recently used dropped first.  Share one cache per client.
    """

    def __init__(self, max_entries: int = 64) -> None:
        if max_entries < 1:
            raise ConfigurationError("ScramCache max_entries must be at least 1")
        self._max_entries = max_entries
        self._entries: OrderedDict[tuple[str, bytes, bytes, int], ScramKeys] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"ScramCache(<{len(self._entries)} entries>)"

    def keys(
        self, mechanism: ScramMechanism, password: bytes, salt: bytes, iterations: int
    ) -> ScramKeys:
        """The keys for ``password`` (prepared bytes), from the cache or freshly derived."""
        key = (mechanism, hashlib.sha256(password).digest(), salt, iterations)
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            return found
        derived = _derive_keys(mechanism, password, salt, iterations)
        self._entries[key] = derived
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)
        return derived


# The stages, in order; a server message that fails a check leaves the client _FAILED for good.
_NEW, _FIRST_SENT, _FIRST_RECEIVED, _FINAL_SENT, _DONE, _FAILED = range(6)
_STAGE_NAMES: Final = ("new", "first sent", "first received", "final sent", "done", "failed")


class ScramClient:
    """One SCRAM conversation, client side.  See the module docstring for the steps.

    ``nonce`` is the client nonce as text (printable ASCII without commas; base64 of random
    bytes is).  ``mongodb_digest`` False skips MongoDB's SCRAM-SHA-1 password digest and
    SASLprep's the password for both mechanisms, as plain RFC 5802 does: for test vectors.
    """

    def __init__(
        self,
        mechanism: ScramMechanism,
        username: str,
        password: str,
        nonce: str,
        *,
        cache: ScramCache | None = None,
        mongodb_digest: bool = True,
    ) -> None:
        if mechanism not in _HASH_NAMES:
            raise ConfigurationError(f"{mechanism!r} is not a SCRAM mechanism")
        if not isinstance(nonce, str) or not _printable_nonce(nonce):
            raise ConfigurationError(
                "the SCRAM client nonce must be printable ASCII without commas"
            )
        self.mechanism: ScramMechanism = mechanism
        self.username = username
        self._hash_name = _HASH_NAMES[mechanism]
        if mechanism == "SCRAM-SHA-1" and mongodb_digest:
            self._password = mongodb_password_digest(username, password).encode("ascii")
        else:
            self._password = _utf8(saslprep(password), "the password")
        escaped = username.replace("=", "=3D").replace(",", "=2C")
        self._nonce = nonce
        self._client_first_bare = b"n=" + _utf8(escaped, "the user name") + b",r=" + nonce.encode()
        self._cache = cache if cache is not None else ScramCache(max_entries=1)
        self._stage = _NEW
        self._server_first = b""
        self._server_nonce = b""
        self._salt = b""
        self._iterations = 0
        self._server_signature = b""

    def __repr__(self) -> str:
        return (
            f"ScramClient({self.mechanism}, username={self.username!r}, password=<hidden>, "
            f"{_STAGE_NAMES[self._stage]})"
        )

    @property
    def complete(self) -> bool:
        """True once the server has proved it knows the password."""
        return self._stage == _DONE

    @property
    def salt(self) -> bytes:
        """The server's salt (empty before its first message)."""
        return self._salt

    @property
    def iterations(self) -> int:
        """The server's iteration count (0 before its first message)."""
        return self._iterations

    def _advance(self, expected: int, step: str) -> None:
        if self._stage == _FAILED:
            raise InvalidOperation(f"SCRAM: {step} after the conversation failed")
        if self._stage != expected:
            raise InvalidOperation(f"SCRAM: {step} is out of order")
        self._stage = expected + 1

    def client_first(self) -> bytes:
        """``n,,n=<user>,r=<nonce>``: the payload of saslStart."""
        self._advance(_NEW, "client_first()")
        return _GS2_HEADER + self._client_first_bare

    def handle_server_first(self, payload: bytes) -> None:
        """Read ``r=<nonce>,s=<salt>,i=<iterations>``; raise AuthenticationError if it is bad."""
        self._advance(_FIRST_SENT, "handle_server_first()")
        self._stage = _FAILED  # until this message proves good
        fields = _fields(payload, "first")
        if not fields or [name for name, _ in fields[:3]] != [b"r", b"s", b"i"]:
            raise _malformed("first")
        nonce, salt, iterations = (value for _, value in fields[:3])
        if not (
            nonce.startswith(self._nonce.encode())
            and len(nonce) > len(self._nonce)
            and _printable_nonce(nonce.decode("ascii", "replace"))
        ):
            raise AuthenticationError("SCRAM: the server's nonce does not extend the client's")
        if not (iterations.isdigit() and iterations.isascii() and len(iterations) <= 10):
            raise _malformed("first")
        count = int(iterations)
        if count < MIN_ITERATIONS:
            raise AuthenticationError(
                f"SCRAM: the server asked for {count} iterations, fewer than the minimum "
                f"{MIN_ITERATIONS}"
            )
        if count > _MAX_ITERATIONS:
            raise AuthenticationError(f"SCRAM: the server asked for {count} iterations, too many")
        self._salt = _base64(salt, "first")
        if not self._salt:
            raise _malformed("first")
        self._server_first = bytes(payload)
        self._server_nonce = nonce
        self._iterations = count
        self._stage = _FIRST_RECEIVED

    def client_final(self) -> bytes:
        """``c=biws,r=<nonce>,p=<proof>``: the payload of the next saslContinue."""
        self._advance(_FIRST_RECEIVED, "client_final()")
        keys = self._cache.keys(self.mechanism, self._password, self._salt, self._iterations)
        without_proof = _CHANNEL_BINDING + b",r=" + self._server_nonce
        auth_message = b",".join((self._client_first_bare, self._server_first, without_proof))
        stored_key = hashlib.new(self._hash_name, keys.client_key).digest()
        client_signature = hmac.digest(stored_key, auth_message, self._hash_name)
        proof = bytes(a ^ b for a, b in zip(keys.client_key, client_signature, strict=True))
        self._server_signature = hmac.digest(keys.server_key, auth_message, self._hash_name)
        return without_proof + b",p=" + base64.b64encode(proof)

    def handle_server_final(self, payload: bytes) -> None:
        """Check ``v=<server signature>``; raise AuthenticationError unless it matches."""
        self._advance(_FINAL_SENT, "handle_server_final()")
        self._stage = _FAILED
        fields = _fields(payload, "final")
        if not fields or fields[0][0] != b"v":
            raise _malformed("final")
        signature = _base64(fields[0][1], "final")
        if not hmac.compare_digest(signature, self._server_signature):
            raise AuthenticationError("SCRAM: the server could not prove it knows the password")
        self._stage = _DONE


def _fields(payload: bytes, which: str) -> list[tuple[bytes, bytes]]:
    """``k=value`` attributes of a server message; an ``e=`` or ``m=`` ends the conversation."""
    if not isinstance(payload, bytes | bytearray | memoryview):
        raise _malformed(which)
    fields: list[tuple[bytes, bytes]] = []
    for part in bytes(payload).split(b","):
        name, equals, value = part.partition(b"=")
        if not equals or len(name) != 1 or not name.isalpha():
            raise _malformed(which)
        fields.append((name, value))
    if fields and fields[0][0] == b"e":
        raise AuthenticationError(f"SCRAM: the server refused: {_server_error(fields[0][1])}")
    if fields and fields[0][0] == b"m":
        raise AuthenticationError("SCRAM: the server requires an extension we do not support")
    return fields


def _server_error(value: bytes) -> str:
    # RFC 5802's server-error-value names are short lower-case tokens; anything else is not
    # repeated (it is the peer's bytes, and could be anything).
    if 0 < len(value) <= 64 and all(c == 0x2D or 0x61 <= c <= 0x7A for c in value):
        return value.decode("ascii")
    return "(an unrecognized error)"


def _base64(value: bytes, which: str) -> bytes:
    try:
        return binascii.a2b_base64(value, strict_mode=True)
    except binascii.Error:
        raise _malformed(which) from None


def _malformed(which: str) -> AuthenticationError:
    return AuthenticationError(f"SCRAM: the server's {which} message is malformed")
