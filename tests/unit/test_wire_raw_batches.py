"""wire/raw_batches.py: a cursor reply read with its batches left as RawDocument views gives
the general decoder's reply, batch documents aside, and those views hold the very bytes of the
batch; malformed replies raise InvalidBSON; a Connection whose command asks for RawDocuments
reads its reply that way, and the next command's reply decodes as usual again."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.bson import RawDocument, decode, encode
from mongo_sansio.bson import raw as raw_module
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.bson.errors import InvalidBSON
from mongo_sansio.bson.raw import UNWALKED
from mongo_sansio.connection.conn import Connection
from mongo_sansio.errors import ProtocolError
from mongo_sansio.wire import encode_op_msg
from mongo_sansio.wire.raw_batches import decode_with_raw_batches

RAW = CodecOptions(document_class=RawDocument)


def _read(reply: dict[str, Any], batch_opts: CodecOptions = RAW) -> dict[str, Any]:
    data = encode(reply)
    return decode_with_raw_batches(data, 0, len(data), DEFAULT_CODEC_OPTIONS, batch_opts, 1)


def _reply(batch: list[Any], key: str = "firstBatch") -> dict[str, Any]:
    return {
        "cursor": {"id": 7, "ns": "db.c", key: batch, "postBatchResumeToken": {"_data": "ab"}},
        "ok": 1.0,
        "$clusterTime": {"clusterTime": 5, "signature": {"hash": b"x" * 20, "keyId": 0}},
    }


documents = st.lists(
    st.dictionaries(
        st.text(min_size=1, max_size=5).filter(lambda k: "\x00" not in k),
        st.one_of(
            st.integers(-(2**31), 2**31 - 1),
            st.text(max_size=8),
            st.none(),
            st.lists(st.integers(0, 9), max_size=3),
        ),
        max_size=4,
    ),
    max_size=6,
)


@given(documents, st.sampled_from(["firstBatch", "nextBatch"]))
def test_the_reply_is_the_general_decoders_with_views_for_the_batch(
    batch: list[dict[str, Any]], key: str
) -> None:
    reply = _reply(batch, key)
    read = _read(reply)
    expected = decode(encode(reply))
    views = read["cursor"][key]
    assert all(type(view) is RawDocument and view.codec_options is RAW for view in views)
    assert [bytes(view.raw) for view in views] == [encode(document) for document in batch]
    assert [view.to_dict() for view in views] == expected["cursor"][key]
    read["cursor"][key] = expected["cursor"][key]
    assert read == expected


def test_batch_views_are_what_raw_document_view_builds() -> None:
    # _raw_documents builds each view inline (RawDocument's slots set there): the slots must be
    # what RawDocument._view sets, and an unwalked view's index is the shared empty one
    data = encode(_reply([{"a": 1, "b": "x"}, {"c": [1]}]))
    views = decode_with_raw_batches(data, 0, len(data), DEFAULT_CODEC_OPTIONS, RAW, 1)["cursor"][
        "firstBatch"
    ]
    for view in views:
        expected = RawDocument._view(data, view._start, view._end, RAW, view._node)
        assert {name: getattr(view, name) for name in RawDocument.__slots__} == {
            name: getattr(expected, name) for name in RawDocument.__slots__
        }
        assert view._index is expected._index is UNWALKED
    assert views[0]["b"] == "x" and dict(views[1]) == {"c": [1]} and dict(views[0]) == {"a": 1, "b": "x"}
    assert UNWALKED == {}  # walking the views gave each an index of its own


def test_batch_views_decode_whole_as_the_decoder_does() -> None:
    # to_dict of a batch view (walked or not) and of a document inside one: what decode
    # gives for the same bytes; the views' options ask for dicts as the defaults do
    batch = [{"_id": n, "name": f"n{n}", "sub": {"k": [n, {"x": 1.5}]}} for n in range(40)]
    data = encode(_reply(batch))
    views = decode_with_raw_batches(data, 0, len(data), DEFAULT_CODEC_OPTIONS, RAW, 1)["cursor"][
        "firstBatch"
    ]
    for number, view in enumerate(views):
        if number % 3 == 1:
            view["name"]  # walked partly
        elif number % 3 == 2:
            list(view)  # walked whole
        assert view.to_dict() == batch[number] == decode(bytes(view.raw))
        assert view["sub"].to_dict() == batch[number]["sub"]
    assert raw_module._dict_options(RAW) is DEFAULT_CODEC_OPTIONS


def test_a_batch_document_not_ending_in_nul_is_refused() -> None:
    data = bytearray(encode(_reply([{"a": 1}, {"b": 2}])))
    first = data.index(b"\x10a\x00") + 7  # the first document's terminating NUL
    data[first] = 1
    with pytest.raises(InvalidBSON, match="not NUL"):
        decode_with_raw_batches(bytes(data), 0, len(data), DEFAULT_CODEC_OPTIONS, RAW, 1)


def test_replies_without_a_cursor_and_other_arrays_decode_as_usual() -> None:
    reply = {
        "n": 2,
        "ok": 1.0,
        "writeErrors": [{"index": 0, "code": 11000}],
        "values": [{"a": 1}],
        "firstBatch": [{"a": 1}],
    }
    assert _read(reply) == decode(encode(reply))
    nested = {"cursor": {"id": 0, "other": {"firstBatch": [{"a": 1}]}}, "ok": 1}
    assert _read(nested) == decode(encode(nested))


def test_a_batch_element_that_is_not_a_document_is_decoded() -> None:
    read = _read(_reply([1, {"a": 1}]))
    first, second = read["cursor"]["firstBatch"]
    assert first == 1 and type(second) is RawDocument and second["a"] == 1


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-1] + b"\x01",  # the reply's NUL
        lambda data: data.replace(b"firstBatch\x00", b"firstBatch\x00\xff"),  # a bad length
        lambda data: data.replace(b"cursor", b"curs\xffr"),  # a key that is not UTF-8
    ],
)
def test_malformed_replies_raise_invalid_bson(damage: Any) -> None:
    data = damage(encode(_reply([{"a": 1}, {"b": "x"}])))
    with pytest.raises(InvalidBSON):
        decode_with_raw_batches(data, 0, len(data), DEFAULT_CODEC_OPTIONS, RAW, 1)


def _exchange(conn: Connection, reply: dict[str, Any], codec_options: Any) -> Any:
    conn.send_command("db", {"find": "c"}, codec_options=codec_options)
    request_id = conn.last_request_id
    assert request_id is not None
    conn.receive_data(encode_op_msg(reply, request_id=100 + request_id, response_to=request_id))
    return conn.next_reply().document  # type: ignore[union-attr]


def test_a_connection_reads_raw_batches_only_for_commands_that_ask() -> None:
    ids = iter(range(1, 100))
    conn = Connection(("h", 1), request_ids=lambda: next(ids))
    reply = _reply([{"a": 1}, {"a": 2}])
    plain = _exchange(conn, reply, None)
    assert type(plain) is dict and plain["cursor"]["firstBatch"] == [{"a": 1}, {"a": 2}]
    aware = CodecOptions(document_class=RawDocument, tz_aware=True)
    raw = _exchange(conn, reply, aware)
    assert type(raw) is dict and raw["$clusterTime"] == plain["$clusterTime"]
    assert [view.codec_options for view in raw["cursor"]["firstBatch"]] == [aware, aware]
    assert [dict(view) for view in raw["cursor"]["firstBatch"]] == [{"a": 1}, {"a": 2}]
    assert _exchange(conn, reply, CodecOptions()) == plain  # back to dicts


def test_a_malformed_raw_reply_breaks_the_connection_with_a_protocol_error() -> None:
    conn = Connection(("h", 1), request_ids=lambda: 1)
    conn.send_command("db", {"find": "c"}, codec_options=RAW)
    data = encode_op_msg(_reply([{"a": 1}]), request_id=9, response_to=1)
    damaged = data.replace(b"cursor", b"curs\xffr")
    conn.receive_data(damaged)
    with pytest.raises(ProtocolError):
        conn.next_reply()
