"""atheris target for what a server sends during authentication: SCRAM payloads and SASL replies.

Invariant: for any bytes, the SCRAM client's ``handle_server_first`` and
``handle_server_final`` accept the message or raise AuthenticationError, nothing else, and
the authentication flow, fed reply documents decoded from the bytes, asks for more, finishes, or
raises AuthenticationError.  What is accepted really is acceptable: a server-first message
extends our nonce and asks for at least 4096 iterations; a server-final message carries the
one right signature.  No error message shows the password.

The first byte picks the check (low two bits) and the mechanism (next bit); the rest is the
payload.

Run a campaign:  python fuzz/scram_payloads.py CORPUS_DIR -max_total_time=3600  (docs/fuzzing.md)
"""

from __future__ import annotations

import base64
from typing import Any

from mongo_sansio.auth import Authenticator, ScramCache, ScramClient, ScramMechanism
from mongo_sansio.bson import decode_all
from mongo_sansio.bson.errors import InvalidBSON
from mongo_sansio.errors import AuthenticationError
from mongo_sansio.flow import ConnectionCommand
from mongo_sansio.uri.credential import Credential

PASSWORD = "pencil-\u00e4"
NONCE = "fyko+d2lbbFgONRv9qkxdawL"
MECHANISMS: tuple[ScramMechanism, ScramMechanism] = ("SCRAM-SHA-1", "SCRAM-SHA-256")
# A well-formed server-first for NONCE: the server-final check starts from it.
GOOD_SERVER_FIRST = NONCE.encode() + b"3rfcNHYJY1ZVvWVs7j"
SERVER_FIRST = b"r=" + GOOD_SERVER_FIRST + b",s=QSXCR+Q6sek8bf92,i=4096"
# Keys are derived once per (mechanism, salt, iterations): keeps the target fast.
_CACHE = ScramCache(max_entries=256)
# Accepted messages with more iterations than this are not turned into a proof (too slow).
_MAX_FUZZ_ITERATIONS = 20_000


def _client(mechanism: ScramMechanism) -> ScramClient:
    client = ScramClient(mechanism, "user", PASSWORD, NONCE, cache=_CACHE)
    client.client_first()
    return client


def _no_password(error: BaseException) -> None:
    assert PASSWORD not in str(error) and PASSWORD not in repr(error), "an error shows the password"


def check_server_first(mechanism: ScramMechanism, payload: bytes) -> None:
    client = _client(mechanism)
    try:
        client.handle_server_first(payload)
    except AuthenticationError as error:
        _no_password(error)
        return
    assert payload.startswith(b"r=" + NONCE.encode()), "accepted another nonce"
    assert client.iterations >= 4096 and client.salt, "accepted a weak or empty salt/count"
    if client.iterations <= _MAX_FUZZ_ITERATIONS:
        server_nonce = payload.split(b",")[0][2:]
        assert client.client_final().startswith(b"c=biws,r=" + server_nonce + b",p=")


def check_server_final(mechanism: ScramMechanism, payload: bytes) -> None:
    client = _client(mechanism)
    client.handle_server_first(SERVER_FIRST)
    client.client_final()
    try:
        client.handle_server_final(payload)
    except AuthenticationError as error:
        _no_password(error)
        assert not client.complete
        return
    assert client.complete
    expected = _expected_signature(mechanism)
    assert payload.split(b",")[0] == b"v=" + expected, "accepted a wrong server signature"


def _expected_signature(mechanism: ScramMechanism) -> bytes:
    # The signature a server that knows PASSWORD sends: found by asking a twin client.
    twin = _client(mechanism)
    twin.handle_server_first(SERVER_FIRST)
    twin.client_final()
    signature: bytes = twin._server_signature  # noqa: SLF001 -- the target checks internals
    return base64.b64encode(signature)


def check_replies(mechanism: str | None, replies: list[Any]) -> None:
    """Feed reply documents to the flow: it goes on, finishes, or raises AuthenticationError."""
    if mechanism == "MONGODB-X509":
        credential = Credential(mechanism, None, None, "$external")
    else:
        credential = Credential(mechanism, "user", PASSWORD, "admin")
    auth = Authenticator(credential, nonce=base64.b64decode(NONCE), cache=_CACHE)
    speculative = replies.pop(0) if replies and mechanism is None else None
    if speculative is not None:
        auth.speculative_document()
    try:
        flow = auth.flow(sasl_supported_mechs=["SCRAM-SHA-256"], speculative_reply=speculative)
        request = next(flow)
        for reply in replies:
            assert isinstance(request, ConnectionCommand)
            request = flow.send(reply)
    except StopIteration:
        return
    except AuthenticationError as error:
        _no_password(error)


def check_one(data: bytes) -> None:
    if not data:
        return
    selector, payload = data[0], data[1:]
    mechanism = MECHANISMS[(selector >> 2) & 1]
    check = selector & 3
    if check == 0:
        check_server_first(mechanism, payload)
    elif check == 1:
        check_server_final(mechanism, payload)
    else:
        try:
            replies = decode_all(payload)
        except InvalidBSON:
            return
        flow_mechanism = (None, "SCRAM-SHA-256", "PLAIN", "MONGODB-X509")[(selector >> 3) & 3]
        check_replies(flow_mechanism, list(replies))


if __name__ == "__main__":
    from _runner import fuzz  # fuzz/ is sys.path[0] when a target runs as a script

    fuzz(check_one)
