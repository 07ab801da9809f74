"""Write batching: the count and size limits, the too-large errors with their index, the
messages the batches make, and PyMongo's batch splitting as an oracle for where splits fall."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import Int64, RawDocument, encode
from mongo_sansio.bson._size import plain_size
from mongo_sansio.errors import DocumentTooLarge, LocalProtocolError
from mongo_sansio.wire import (
    MORE_TO_COME,
    MessageReader,
    OpMsg,
    RequestIds,
    WriteLimits,
    encode_write_batch,
    split_write_command,
    write_batches,
)
from mongo_sansio.wire.batching import COMMAND_OVERHEAD

INSERT = {"insert": "coll", "ordered": True, "$db": "test"}


def docs_of_size(count: int, size: int) -> list[dict]:
    """``count`` documents of exactly ``size`` encoded bytes each."""
    base = len(encode({"_id": 0, "s": ""}))
    return [{"_id": i, "s": "x" * (size - base)} for i in range(count)]


def read(buffers: list[Any]) -> OpMsg:
    reader = MessageReader()
    reader.receive_data(b"".join(buffers))
    message = reader.next_message()
    assert isinstance(message, OpMsg)
    return message


def test_split_by_count() -> None:
    body, batches = split_write_command(
        INSERT, docs_of_size(10, 40), limits=WriteLimits(max_write_batch_size=3)
    )
    assert [(b.start, b.count) for b in batches] == [(0, 3), (3, 3), (6, 3), (9, 1)]
    assert body == encode(INSERT)
    assert all(b.identifier == "documents" for b in batches)


def test_split_by_message_size_exactly_at_the_limit() -> None:
    body = encode(INSERT)
    overhead = 16 + 4 + 1 + len(body) + 1 + 4 + len("documents") + 1
    limits = WriteLimits(max_message_size=overhead + 3 * 100)
    _, batches = split_write_command(INSERT, docs_of_size(7, 100), limits=limits)
    assert [b.count for b in batches] == [3, 3, 1]
    assert batches[0].message_size == limits.max_message_size
    for batch in batches:
        data = b"".join(encode_write_batch(body, batch, request_id=1))
        assert len(data) == batch.message_size <= limits.max_message_size


def test_checksum_room_is_reserved() -> None:
    body = encode(INSERT)
    overhead = 16 + 4 + 1 + len(body) + 1 + 4 + len("documents") + 1
    limits = WriteLimits(max_message_size=overhead + 300)
    _, plain = split_write_command(INSERT, docs_of_size(3, 100), limits=limits)
    _, checked = split_write_command(INSERT, docs_of_size(3, 100), limits=limits, checksum=True)
    assert [b.count for b in plain] == [3]
    assert [b.count for b in checked] == [2, 1]
    data = b"".join(encode_write_batch(body, checked[0], request_id=1, checksum=True))
    assert len(data) == checked[0].message_size and read([data]).checksum_present


def test_batches_encode_to_messages_with_the_documents_in_order() -> None:
    documents = docs_of_size(25, 60)
    body, batches = split_write_command(
        INSERT, documents, limits=WriteLimits(max_write_batch_size=10)
    )
    ids = RequestIds()
    seen = []
    for batch in batches:
        message = read(encode_write_batch(body, batch, request_id=ids.next()))
        assert message.body == INSERT
        seen += message.sequences["documents"]
    assert seen == documents


def test_documents_taken_from_the_command_without_changing_it() -> None:
    command = {"update": "coll", "updates": [{"q": {}, "u": {"$set": {"a": 1}}}], "$db": "d"}
    body, batches = split_write_command(command)
    assert "updates" in command
    assert body == encode({"update": "coll", "$db": "d"})
    assert [b.identifier for b in batches] == ["updates"]
    with pytest.raises(LocalProtocolError, match="twice"):
        split_write_command(command, [{}])


def test_delete_and_custom_identifier() -> None:
    _, batches = split_write_command({"delete": "c"}, [{"q": {}, "limit": 0}])
    assert batches[0].identifier == "deletes"
    _, batches = split_write_command({"bulkWrite": 1}, [{"insert": 0}], identifier="ops")
    assert batches[0].identifier == "ops"
    with pytest.raises(LocalProtocolError, match="cannot batch"):
        split_write_command({"find": "c"}, [{}])
    with pytest.raises(LocalProtocolError, match="no documents"):
        split_write_command({"insert": "c"})


def test_empty_documents_give_no_batches() -> None:
    assert split_write_command(INSERT, [])[1] == []


def test_insert_document_over_max_bson_object_size_names_its_index() -> None:
    limits = WriteLimits(max_bson_object_size=1000)
    documents = docs_of_size(3, 500) + docs_of_size(1, 1001) + docs_of_size(2, 500)
    with pytest.raises(DocumentTooLarge, match=r"documents\[3\] is 1001 bytes") as info:
        split_write_command(INSERT, documents, limits=limits)
    assert (info.value.index, info.value.size, info.value.limit) == (3, 1001, 1000)
    assert isinstance(info.value, ValueError) and isinstance(info.value, LocalProtocolError)
    # acknowledged writes may leave that check to the server
    _, batches = split_write_command(INSERT, documents, limits=limits, check_document_size=False)
    assert sum(b.count for b in batches) == 6


def test_update_statements_get_the_command_allowance() -> None:
    limits = WriteLimits(max_bson_object_size=1000)
    statement = {"q": {}, "u": {"s": "x" * 1100}}
    _, batches = split_write_command({"update": "c"}, [statement], limits=limits)
    assert batches[0].count == 1
    too_big = {"q": {}, "u": {"s": "x" * (1000 + COMMAND_OVERHEAD)}}
    with pytest.raises(DocumentTooLarge, match=r"updates\[1\]") as info:
        split_write_command({"update": "c"}, [statement, too_big], limits=limits)
    assert info.value.limit == 1000 + COMMAND_OVERHEAD


def test_document_that_no_message_can_carry_always_raises() -> None:
    limits = WriteLimits(max_message_size=500, max_bson_object_size=10_000)
    with pytest.raises(DocumentTooLarge, match="maxMessageSizeBytes") as info:
        split_write_command(
            INSERT, docs_of_size(1, 100) + docs_of_size(1, 480), limits=limits,
            check_document_size=False,
        )  # fmt: skip
    assert info.value.index == 1


def test_command_over_the_limit() -> None:
    with pytest.raises(DocumentTooLarge, match="command document"):
        split_write_command(
            {"insert": "c", "pad": "x" * 20_000}, [{}], limits=WriteLimits(max_bson_object_size=100)
        )


def test_encoded_documents_pass_through() -> None:
    raw = RawDocument(encode({"_id": 1}))
    pre = encode({"_id": 2})
    body, batches = split_write_command(INSERT, [raw, pre, {"_id": 3}])
    buffers = encode_write_batch(body, batches[0], request_id=1, flags=MORE_TO_COME)
    assert any(b is raw.raw for b in buffers) and any(b is pre for b in buffers)
    message = read(buffers)
    assert message.more_to_come
    assert message.sequences["documents"] == [{"_id": 1}, {"_id": 2}, {"_id": 3}]


def test_limits_from_hello() -> None:
    limits = WriteLimits.from_hello(
        {"maxWriteBatchSize": 1000, "maxMessageSizeBytes": 1 << 20, "maxBsonObjectSize": 1 << 16}
    )
    assert (limits.max_write_batch_size, limits.max_message_size, limits.max_bson_object_size) == (
        1000,
        1 << 20,
        1 << 16,
    )
    assert WriteLimits.from_hello({}) == WriteLimits()
    with pytest.raises(LocalProtocolError):
        WriteLimits(max_write_batch_size=0)


# -- PyMongo as an oracle for where the splits fall ------------------------------------------


def pymongo_split(
    command: dict, documents: list[dict], limits: WriteLimits, use_c: bool
) -> list[int]:
    """Batch sizes PyMongo chooses, calling its batch encoder until the documents run out."""
    import pymongo.message as message
    from bson.codec_options import DEFAULT_CODEC_OPTIONS

    ctx = SimpleNamespace(
        max_bson_size=limits.max_bson_object_size,
        max_message_size=limits.max_message_size,
        max_write_batch_size=limits.max_write_batch_size,
    )
    encode_batch = message._batched_op_msg if use_c else message._batched_op_msg_impl
    sizes = []
    rest = documents
    while rest:
        if use_c:
            _, _, sent = encode_batch(0, command, rest, True, DEFAULT_CODEC_OPTIONS, ctx)
        else:
            from io import BytesIO

            buf = BytesIO()
            buf.write(bytes(16))  # the header, as PyMongo's own caller writes it first
            sent, _ = encode_batch(0, command, rest, True, DEFAULT_CODEC_OPTIONS, ctx, buf)
        sizes.append(len(sent))
        rest = rest[len(sent) :]
    return sizes


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(20, 300), min_size=1, max_size=40),
    max_count=st.integers(1, 12),
    room=st.integers(300, 2000),
    use_c=st.booleans(),
)
def test_splits_match_pymongo(sizes: list[int], max_count: int, room: int, use_c: bool) -> None:
    documents = [docs_of_size(1, size)[0] | {"_id": i} for i, size in enumerate(sizes)]
    limits = WriteLimits(max_write_batch_size=max_count, max_message_size=100 + room)
    command = {"insert": "coll", "$db": "test"}
    try:
        _, batches = split_write_command(command, documents, limits=limits)
    except DocumentTooLarge:
        return  # a document no message can carry: PyMongo raises too (checked below)
    assert [b.count for b in batches] == pymongo_split(command, documents, limits, use_c)


def test_pymongo_also_refuses_a_document_no_message_can_carry() -> None:
    from pymongo.errors import DocumentTooLarge as PyMongoTooLarge

    limits = WriteLimits(max_message_size=200)
    documents = docs_of_size(1, 300)
    with pytest.raises(DocumentTooLarge):
        split_write_command({"insert": "c", "$db": "t"}, documents, limits=limits)
    with pytest.raises(PyMongoTooLarge):
        pymongo_split({"insert": "c", "$db": "t"}, documents, limits, use_c=True)


# -- write_batches: the body measured, not encoded, when its values are plain ------------------

_plain_scalars = st.one_of(
    st.text(max_size=20),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.builds(Int64, st.integers(min_value=-(2**63), max_value=2**63 - 1)),
)
_plain_documents = st.recursive(
    st.dictionaries(st.text(max_size=8), _plain_scalars, max_size=6),
    lambda inner: st.dictionaries(st.text(max_size=8), st.one_of(_plain_scalars, inner), max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_plain_documents)
def test_plain_size_is_the_encoded_size_or_none(document: dict[str, Any]) -> None:
    try:
        expected: int | None = len(encode(document))
    except Exception:  # noqa: BLE001 - a key with NUL, a lone surrogate: the encoder refuses
        expected = None
    size = plain_size(document)
    assert size is None or size == expected
    if expected is not None and "\x00" not in repr(document):
        assert size == expected  # plain values are always measured


def test_plain_size_leaves_other_values_to_the_encoder() -> None:
    assert plain_size({"insert": "c", "comment": ["x"]}) is None
    assert plain_size({"insert": "c", "n": 2**64}) is None
    assert plain_size({"insert": "c", "let": {"x": b"bytes"}}) is None
    assert plain_size({"insert": "c\ud800"}) is None


@settings(max_examples=100, deadline=None)
@given(
    st.fixed_dictionaries(
        {"insert": st.text(min_size=1, max_size=30), "ordered": st.booleans()},
        optional={"comment": st.one_of(st.text(), st.lists(st.integers(-(2**40), 2**40))),
                  "writeConcern": st.fixed_dictionaries({"w": st.one_of(st.integers(0, 5), st.text())})},
    ),
    st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=30),
    st.integers(min_value=600, max_value=3000),
)
def test_write_batches_are_split_write_commands_batches(
    command: dict[str, Any], sizes: list[int], max_message_size: int
) -> None:
    command = {"insert": command.pop("insert"), **command}  # (the command's name comes first)
    documents = [{"_id": index, "pad": "x" * size} for index, size in enumerate(sizes)]
    limits = WriteLimits(max_message_size=max_message_size, max_write_batch_size=7)

    def outcome(call: Any) -> Any:
        try:
            return [(b.start, b.documents, b.message_size) for b in call()]
        except DocumentTooLarge as error:
            return (error.index, error.size, error.limit)

    expected = outcome(lambda: split_write_command(command, documents, limits=limits)[1])
    assert outcome(lambda: write_batches(command, documents, limits=limits)) == expected
    # measured as sent, with the $db the connection adds (no copy of the command made)
    with_db = {**command, "$db": "some_db"}
    expected = outcome(lambda: split_write_command(with_db, documents, limits=limits)[1])
    assert outcome(lambda: write_batches(command, documents, limits=limits, db="some_db")) == expected
