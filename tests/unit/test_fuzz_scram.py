"""The authentication fuzz target's invariant (fuzz/scram_payloads.py), run briefly under
hypothesis: random bytes, near-valid SCRAM messages, and SASL reply documents."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import encode

_TARGET = Path(__file__).resolve().parents[2] / "fuzz" / "scram_payloads.py"
_spec = importlib.util.spec_from_file_location("fuzz_scram_payloads", _TARGET)
assert _spec is not None and _spec.loader is not None
fuzz_target: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz_target)

NONCE = fuzz_target.NONCE.encode()
MECHANISMS = st.sampled_from(["SCRAM-SHA-1", "SCRAM-SHA-256"])

_FIRST_PIECES = st.sampled_from(
    [
        b"r=",
        NONCE,
        NONCE[:-1],
        b"3rfcNHYJ",
        b"\xff",
        b" ",
        b",",
        b"s=",
        b"QSXCR+Q6sek8bf92",
        b"AAAA",
        b"====",
        b"i=",
        b"4096",
        b"4095",
        b"5000",
        b"0",
        b"-1",
        b"99999999999",
        b"e=",
        b"other-error",
        b"m=",
        b"x=",
        b"=",
        b"\x00",
    ]
)


@st.composite
def near_valid_server_first(draw: st.DrawFn) -> bytes:
    parts = [
        b"r=" + NONCE + draw(st.sampled_from([b"", b"3rfc", b"\xff", b",", b"abc=+/"])),
        b"s="
        + draw(st.sampled_from([b"QSXCR+Q6sek8bf92", b"", b"QSXCR", b"W22ZaJ0SNY7soEsUEjb6gQ=="])),
        b"i=" + draw(st.sampled_from([b"4096", b"4095", b"4097", b"", b"x", b"10000"])),
    ]
    parts = draw(st.permutations(parts)) if draw(st.booleans()) else parts
    extra = draw(st.lists(st.sampled_from([b"x=1", b"e=bad", b"", b"m=1"]), max_size=2))
    return b",".join(parts + extra)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=120))
def test_random_bytes(data: bytes) -> None:
    fuzz_target.check_one(data)


@settings(max_examples=400, deadline=None)
@given(
    MECHANISMS,
    st.one_of(near_valid_server_first(), st.lists(_FIRST_PIECES, max_size=14).map(b"".join)),
)
def test_server_first(mechanism: str, payload: bytes) -> None:
    fuzz_target.check_server_first(mechanism, payload)


@st.composite
def near_valid_server_final(draw: st.DrawFn) -> bytes:
    mechanism = draw(MECHANISMS)
    right = b"v=" + fuzz_target._expected_signature(mechanism)
    payload = bytearray(right + draw(st.sampled_from([b"", b",x=1", b",", b"="])))
    for _ in range(draw(st.integers(0, 2))):
        if payload:
            index = draw(st.integers(0, len(payload) - 1))
            payload[index] = draw(st.integers(0, 255))
    selector = 1 | (4 if mechanism == "SCRAM-SHA-256" else 0)  # check 1: the server final
    return bytes([selector]) + bytes(payload)


@settings(max_examples=300, deadline=None)
@given(near_valid_server_final())
def test_server_final(data: bytes) -> None:
    fuzz_target.check_one(data)


def test_server_final_accepts_the_right_signature() -> None:
    for mechanism in ("SCRAM-SHA-1", "SCRAM-SHA-256"):
        fuzz_target.check_server_final(
            mechanism, b"v=" + fuzz_target._expected_signature(mechanism)
        )


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.text(max_size=6),
    st.binary(max_size=20),
    st.just(fuzz_target.SERVER_FIRST),
    st.just(b"v=" + fuzz_target._expected_signature("SCRAM-SHA-256")),
)
_REPLY = st.fixed_dictionaries(
    {},
    optional={
        "ok": st.sampled_from([1, 1.0, 0, 0.0, True, "1"]),
        "conversationId": st.sampled_from([1, 0, -1, "1", True]),
        "payload": _VALUES,
        "done": st.sampled_from([True, False, 1, None]),
        "code": st.sampled_from([18, 0, "18", None]),
        "errmsg": st.text(max_size=10),
    },
)


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 3), st.lists(_REPLY, min_size=1, max_size=4))
def test_reply_documents(mechanism_index: int, replies: list[dict[str, Any]]) -> None:
    selector = 2 | (mechanism_index << 3)
    fuzz_target.check_one(bytes([selector]) + b"".join(encode(reply) for reply in replies))


def _good_conversation(mechanism_index: int) -> list[dict[str, Any]]:
    if mechanism_index == 2:  # PLAIN
        return [{"ok": 1, "conversationId": 1, "payload": b"", "done": True}]
    if mechanism_index == 3:  # MONGODB-X509
        return [{"ok": 1, "user": "CN=client"}]
    final = b"v=" + fuzz_target._expected_signature("SCRAM-SHA-256")
    return [
        {"ok": 1, "conversationId": 1, "payload": fuzz_target.SERVER_FIRST, "done": False},
        {"ok": 1, "conversationId": 1, "payload": final, "done": False},
        {"ok": 1, "conversationId": 1, "payload": b"", "done": True},
    ]


@st.composite
def near_valid_conversations(draw: st.DrawFn) -> tuple[int, list[dict[str, Any]]]:
    """A conversation the flow accepts, with a few fields dropped or replaced."""
    mechanism_index = draw(st.integers(0, 3))
    replies = _good_conversation(mechanism_index)
    for _ in range(draw(st.integers(0, 2))):
        reply = replies[draw(st.integers(0, len(replies) - 1))]
        key = draw(st.sampled_from(["ok", "conversationId", "payload", "done", "code"]))
        if draw(st.booleans()):
            reply.pop(key, None)
        else:
            reply[key] = draw(_VALUES)
    return mechanism_index, replies[: draw(st.integers(1, len(replies)))]


@settings(max_examples=400, deadline=None)
@given(near_valid_conversations())
def test_near_valid_conversations(conversation: tuple[int, list[dict[str, Any]]]) -> None:
    mechanism_index, replies = conversation
    selector = 2 | (mechanism_index << 3)
    fuzz_target.check_one(bytes([selector]) + b"".join(encode(reply) for reply in replies))
