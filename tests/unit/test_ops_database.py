"""The database flows (no sockets): PyMongo's rules for command / cursor_command, listing,
creating and dropping collections, listing databases; the explain of a find; and the codec
options helpers that re-read documents as a database or collection asks."""

from __future__ import annotations

import datetime
import uuid
from collections import OrderedDict
from typing import Any

import pytest
from flow_script import ABSENT, Step, command, cursor_reply, error_reply, run_flow
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import Binary, DatetimeMS, Int64, RawDocument, decode, encode
from mongo_sansio.bson.codec_options import (
    CodecOptions,
    DatetimeConversion,
    UuidRepresentation,
)
from mongo_sansio.errors import InvalidOperation, RemoteProtocolError, ServerError
from mongo_sansio.flow import RunCommand, SelectServer, ServerInfo
from mongo_sansio.ops.collection import CollectionOps
from mongo_sansio.ops.database import CollectionInvalid, DatabaseOps, list_databases
from mongo_sansio.ops.decoding import (
    apply_codec_options,
    codec_options_from_keywords,
    raw_batch,
)
from mongo_sansio.ops.explain import explain_find
from mongo_sansio.ops.write_concern import WriteConcern
from mongo_sansio.selection.read_preference import Mode, ReadPreference

PRIMARY_SERVER = ServerInfo(("p", 27017), 21)


def primary() -> Step:
    return Step(SelectServer, reply=PRIMARY_SERVER)


def sent(step: Step) -> RunCommand:
    assert isinstance(step.seen, RunCommand)
    return step.seen


def database(**options: Any) -> DatabaseOps:
    return DatabaseOps("db", **options)


# --- command -----------------------------------------------------------------------------------


def test_command_by_name_with_value_fields_and_comment() -> None:
    step = command("count", {"n": 2, "ok": 1}, db="db")
    flow = database().command("count", "things", query={"a": 1}, comment="why")
    assert run_flow(flow, primary(), step)["n"] == 2
    assert list(sent(step).body) == ["count", "query", "comment"]
    assert sent(step).body["count"] == "things" and sent(step).body["comment"] == "why"


def test_command_ignores_the_databases_read_preference() -> None:
    secondary = ReadPreference(mode=Mode.SECONDARY)
    selection = Step(SelectServer, read_preference=ReadPreference(), reply=PRIMARY_SERVER)
    run_flow(database(read_preference=secondary).command("ping"), selection, command("ping"))


def test_command_check_false_and_allowable_errors_return_the_error_reply() -> None:
    refused = error_reply(59, errmsg="no such command: 'x'", name="CommandNotFound")
    reply = run_flow(database().command("x", check=False), primary(), command("x", refused))
    assert reply["code"] == 59 and reply["ok"] == 0
    by_code = database().command("x", allowable_errors=[59])
    assert run_flow(by_code, primary(), command("x", refused))["code"] == 59
    by_message = database().command("x", allowable_errors=["no such command: 'x'"])
    assert run_flow(by_message, primary(), command("x", refused))["code"] == 59
    with pytest.raises(ServerError) as caught:
        run_flow(database().command("x", allowable_errors=[13]), primary(), command("x", refused))
    assert caught.value.code == 59


def test_cursor_command_opens_a_cursor_or_says_there_is_none() -> None:
    step = command("find", cursor_reply([{"_id": 1}], cursor_id=5, ns="db.things"))
    flow = database().cursor_command("find", "things", batchSize=1, comment="c")
    cursor = run_flow(flow, primary(), step)
    # the comment goes on the getMores only (PyMongo: "attach to future getMores")
    assert sent(step).body == {"find": "things", "batchSize": 1}
    assert cursor.cursor_id == 5 and cursor.comment == "c" and cursor.next_buffered() == {"_id": 1}
    with pytest.raises(InvalidOperation, match="Command does not return a cursor"):
        run_flow(database().cursor_command("ping"), primary(), command("ping", {"ok": 1}))
    with pytest.raises(ValueError):
        database().cursor_command("find", "things", max_await_time_ms=-1)


# --- collections -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filter", "name_only"),
    [(None, True), ({}, True), ({"name": "a"}, True), ({"name": "a", "type": "view"}, ABSENT)],
)
def test_list_collection_names_asks_for_names_only_when_the_filter_allows(
    filter: Any, name_only: Any
) -> None:
    step = command(
        "listCollections",
        cursor_reply([{"name": "a"}], ns="db.$cmd.listCollections"),
        body={"nameOnly": name_only},
    )
    assert run_flow(database().list_collection_names(filter), primary(), step) == ["a"]


def test_list_collections_passes_the_commands_own_fields() -> None:
    step = command("listCollections", cursor_reply([], ns="db.$cmd.listCollections"))
    run_flow(
        database().list_collections(authorizedCollections=True, nameOnly=True), primary(), step
    )
    assert sent(step).body == {
        "listCollections": 1,
        "cursor": {},
        "authorizedCollections": True,
        "nameOnly": True,
    }


def test_create_collection_checks_that_it_does_not_exist_first() -> None:
    listing = command(
        "listCollections",
        cursor_reply([], ns="db.$cmd.listCollections"),
        body={"filter": {"name": "new"}, "nameOnly": True},
    )
    create = command("create", body={"create": "new", "capped": True, "writeConcern": {"w": 2}})
    flow = database().create_collection("new", write_concern=WriteConcern(w=2), capped=True)
    created = run_flow(flow, primary(), listing, primary(), create)
    assert created.full_name == "db.new" and created.write_concern == WriteConcern(w=2)

    exists = command("listCollections", cursor_reply([{"name": "new"}], ns="db.$cmd.x"))
    with pytest.raises(CollectionInvalid, match="collection new already exists"):
        run_flow(database().create_collection("new"), primary(), exists)  # no create sent


def test_drop_collection_returns_the_reply_even_for_a_missing_collection() -> None:
    ok = {"ok": 1, "ns": "db.c", "nIndexesWas": 1}
    step = command("drop", ok, body={"drop": "c", "comment": "bye", "writeConcern": {"w": 1}})
    flow = database(write_concern=WriteConcern(w=1)).drop_collection("c", comment="bye")
    assert run_flow(flow, primary(), step) == ok
    missing = error_reply(26, errmsg="ns not found", name="NamespaceNotFound")
    assert (
        run_flow(database().drop_collection("c"), primary(), command("drop", missing))["code"] == 26
    )
    with pytest.raises(ServerError):
        run_flow(database().drop_collection("c"), primary(), command("drop", error_reply(13)))


def test_list_databases_reads_the_databases_array() -> None:
    entries = [{"name": "admin", "sizeOnDisk": 1}, {"name": "db", "sizeOnDisk": 2}]
    step = command("listDatabases", {"databases": entries, "ok": 1}, db="admin")
    assert run_flow(list_databases(comment=1, nameOnly=True), primary(), step) == entries
    assert sent(step).body == {"listDatabases": 1, "nameOnly": True, "comment": 1}
    for reply in ({"ok": 1}, {"databases": [3], "ok": 1}):
        with pytest.raises(RemoteProtocolError, match="listDatabases"):
            run_flow(list_databases(), primary(), command("listDatabases", reply))


# --- explain -----------------------------------------------------------------------------------


def test_explain_wraps_the_find_with_a_hard_limit() -> None:
    step = command("explain", {"queryPlanner": {}, "ok": 1}, db="db")
    flow = explain_find(
        CollectionOps("db", "c"), {"a": 1}, ["a"], limit=3, max_await_time_ms=5, sort="a"
    )
    assert "queryPlanner" in run_flow(flow, primary(), step)
    inner = sent(step).body["explain"]
    assert inner["find"] == "c" and inner["filter"] == {"a": 1}
    assert inner["limit"] == 3 and inner["singleBatch"] is True
    assert inner["projection"] == {"a": 1} and inner["sort"] == {"a": 1}
    assert "maxAwaitTimeMS" not in inner and "maxTimeMS" not in inner


# --- codec options -----------------------------------------------------------------------------

_OPTIONS = [
    CodecOptions(tz_aware=True),
    CodecOptions(tz_aware=True, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
    CodecOptions(uuid_representation=UuidRepresentation.STANDARD),
    CodecOptions(uuid_representation=UuidRepresentation.PYTHON_LEGACY),
    CodecOptions(document_class=OrderedDict),
    CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_MS),
    CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_CLAMP),
]

_values = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.text(max_size=5),
    st.datetimes(
        min_value=datetime.datetime(1, 1, 1), max_value=datetime.datetime(9999, 12, 31)
    ).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)),
    st.integers(min_value=-(2**62), max_value=2**62).map(DatetimeMS),
    st.binary(min_size=16, max_size=16).flatmap(
        lambda b: st.sampled_from([Binary(b, 3), Binary(b, 4)])
    ),
)
_documents = st.recursive(
    st.dictionaries(st.text(max_size=4).filter(lambda k: "\x00" not in k), _values, max_size=4),
    lambda inner: st.dictionaries(
        st.text(max_size=4).filter(lambda k: "\x00" not in k),
        inner | st.lists(inner, max_size=3),
        max_size=3,
    ),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(_documents, st.sampled_from(_OPTIONS))
def test_reading_again_equals_decoding_the_bytes_with_the_options(
    document: dict[str, Any], options: CodecOptions
) -> None:
    """What a connection decoded with the defaults, re-read under ``options``, is what
    decoding the server's bytes with ``options`` gives."""
    data = encode(document)
    as_received = decode(data)
    assert apply_codec_options(as_received, options) == decode(data, options)


def test_reading_again_keeps_types_and_costs_nothing_by_default() -> None:
    tag = uuid.UUID(int=1)
    received = decode(
        encode({"u": Binary(tag.bytes, 4), "d": {"x": datetime.datetime(2020, 1, 1)}})
    )
    assert apply_codec_options(received, CodecOptions()) is received
    assert apply_codec_options(received, CodecOptions(max_nesting_depth=5)) is received
    again = apply_codec_options(
        received,
        CodecOptions(
            document_class=OrderedDict,
            tz_aware=True,
            uuid_representation=UuidRepresentation.STANDARD,
        ),
    )
    assert type(again) is OrderedDict and type(again["d"]) is OrderedDict
    assert again["u"] == tag and again["d"]["x"].tzinfo is not None
    assert apply_codec_options(3, CodecOptions(tz_aware=True)) == 3
    raw = RawDocument(encode({"a": Int64(1)}))
    assert apply_codec_options(raw, CodecOptions(document_class=OrderedDict)) == {"a": 1}


def test_raw_batch_is_the_concatenated_bson() -> None:
    documents = [{"_id": 1}, {"_id": 2, "s": "x"}]
    assert raw_batch(documents) == encode(documents[0]) + encode(documents[1])
    assert raw_batch([RawDocument(encode({"a": 1}))]) == encode({"a": 1})
    assert raw_batch([]) == b""


def test_codec_keywords_as_pymongo_reads_them() -> None:
    options = codec_options_from_keywords(
        {
            "document_class": OrderedDict,
            "TZ_aware": "true",
            "tzinfo": datetime.UTC,
            "uuidrepresentation": "javaLegacy",
            "datetime_conversion": "DATETIME_AUTO",
            "unicode_decode_error_handler": "replace",
            "w": 1,  # not a codec option: ignored
        }
    )
    assert options == CodecOptions(
        document_class=OrderedDict,
        tz_aware=True,
        tzinfo=datetime.UTC,
        uuid_representation=UuidRepresentation.JAVA_LEGACY,
        datetime_conversion=DatetimeConversion.DATETIME_AUTO,
        unicode_decode_error_handler="replace",
    )
    assert codec_options_from_keywords({"tz_aware": None}) == CodecOptions()
    assert codec_options_from_keywords({"datetime_conversion": 3}).datetime_conversion is (
        DatetimeConversion.DATETIME_MS
    )


@pytest.mark.parametrize(
    ("keywords", "error"),
    [
        ({"document_class": int}, TypeError),
        ({"tz_aware": "maybe"}, ValueError),
        ({"tzinfo": "UTC", "tz_aware": True}, TypeError),
        ({"tzinfo": datetime.UTC}, ValueError),
        ({"uuidRepresentation": "standrd"}, ValueError),
        ({"datetime_conversion": "SOMETIMES"}, ValueError),
        ({"datetime_conversion": 1.5}, TypeError),
        ({"unicode_decode_error_handler": "shrug"}, ValueError),
    ],
)
def test_bad_codec_keywords(keywords: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        codec_options_from_keywords(keywords)
