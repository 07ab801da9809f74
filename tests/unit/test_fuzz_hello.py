"""The hello reply fuzz target's invariant (fuzz/hello_reply.py), run briefly under hypothesis:
random bytes, hello-like documents, and framed replies with bytes changed, inserted or cut."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import Int64, ObjectId, encode
from mongo_sansio.wire import MORE_TO_COME, ZlibCompressor, encode_op_msg, encode_op_reply

_TARGET = Path(__file__).resolve().parents[2] / "fuzz" / "hello_reply.py"
_spec = importlib.util.spec_from_file_location("fuzz_hello_reply", _TARGET)
assert _spec is not None and _spec.loader is not None
fuzz_target: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz_target)

_scalars = (
    st.none() | st.booleans() | st.integers(-(2**31), 2**31 - 1) | st.floats(allow_nan=False)
    | st.text(max_size=6) | st.binary(max_size=4)
    | st.sampled_from(
        ["zlib", "zstd", "snappy", "isdbgrid", "a:1", "[::1]:27018", "h:0", "SCRAM-SHA-256",
         ObjectId(), Int64(3), 7, 25, 26, 6, 16 * 1024 * 1024, 48_000_000, 1.0, 0.0]
    )
)  # fmt: skip
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["processId", "counter", "done", "payload"]), inner, max_size=3
        )
    ),
    max_leaves=6,
)
_keys = st.sampled_from(
    [
        "ok", "isWritablePrimary", "ismaster", "helloOk", "minWireVersion", "maxWireVersion",
        "maxBsonObjectSize", "maxMessageSizeBytes", "maxWriteBatchSize", "compression",
        "logicalSessionTimeoutMinutes", "saslSupportedMechs", "speculativeAuthenticate",
        "connectionId", "serviceId", "topologyVersion", "setName", "hosts", "primary",
        "secondary", "msg", "isreplicaset", "hidden", "arbiterOnly", "errmsg", "code",
        "loadBalanced",
    ]
)  # fmt: skip
hello_documents = st.dictionaries(_keys, _values, max_size=10)


@st.composite
def framed_replies(draw: st.DrawFn) -> bytes:
    document = draw(hello_documents)
    kind = draw(st.sampled_from(["msg", "more", "zlib", "reply", "wrong-to"]))
    if kind == "reply":
        return encode_op_reply([document], request_id=5, response_to=1)
    return encode_op_msg(
        document,
        request_id=5,
        response_to=2 if kind == "wrong-to" else 1,
        flags=MORE_TO_COME if kind == "more" else 0,
        compressor=ZlibCompressor() if kind == "zlib" else None,
    )


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(framed_replies()))
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["set", "insert", "cut"]))
        if action == "set" and position < len(data):
            data[position] = draw(st.integers(0, 255))
        elif action == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=4))
        else:
            del data[position : position + draw(st.integers(1, 8))]
    return bytes(data)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120))
def test_random_bytes(data: bytes) -> None:
    fuzz_target.check_one(data)


@settings(max_examples=200, deadline=None)
@given(hello_documents)
def test_hello_like_documents(document: dict[str, Any]) -> None:
    fuzz_target.check_one(encode(document))


@settings(max_examples=100, deadline=None)
@given(st.lists(framed_replies(), min_size=1, max_size=3).map(b"".join))
def test_framed_replies(data: bytes) -> None:
    fuzz_target.check_bytes(data)


@settings(max_examples=150, deadline=None)
@given(mutated())
def test_mutated_replies(data: bytes) -> None:
    fuzz_target.check_bytes(data)


def test_a_valid_reply_gives_a_description() -> None:
    reply = {"ok": 1, "isWritablePrimary": True, "maxWireVersion": 21, "compression": ["zlib"]}
    description = fuzz_target.check_document(reply)
    assert description is not None and description.compressor == "zlib"
    data = encode_op_msg(reply, request_id=5, response_to=1)
    assert len(fuzz_target._feed(data, 3, False)) == 1
