"""find_one_and_update / find_one_and_replace / find_one_and_delete: the findAndModify bodies
(crud.md's shape, PyMongo's argument checks), the value they return (decoded with the
collection's codec options) and write concern errors."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from flow_script import ABSENT, Step, command, run_flow

from mongo_sansio.bson import Binary
from mongo_sansio.bson.codec_options import CodecOptions, UuidRepresentation
from mongo_sansio.errors import ConfigurationError, WriteConcernError
from mongo_sansio.flow import RunCommand, SelectServer, ServerInfo
from mongo_sansio.ops.collection import CollectionOps
from mongo_sansio.ops.find_and_modify import ReturnDocument
from mongo_sansio.ops.write_concern import WriteConcern

PRIMARY_SERVER = ServerInfo(("p", 27017), 21)


def collection(**options: Any) -> CollectionOps:
    return CollectionOps("db", "coll", **options)


def select_for_write() -> Step:
    def check(request: Any) -> None:
        assert request.for_writes, request

    return Step(SelectServer, reply=PRIMARY_SERVER, check=check)


def body(step: Step) -> dict[str, Any]:
    assert isinstance(step.seen, RunCommand)
    return dict(step.seen.body)


def test_return_document_is_pymongos_boolean() -> None:
    assert ReturnDocument.BEFORE is False and ReturnDocument.AFTER is True


def test_find_one_and_update_sends_every_option() -> None:
    step = command("findAndModify", {"value": {"_id": 1, "n": 2}, "ok": 1}, db="db")
    flow = collection(write_concern=WriteConcern(w="majority")).find_one_and_update(
        {"_id": 1},
        {"$inc": {"n": 1}},
        projection=["n"],
        sort=[("n", -1)],
        upsert=True,
        return_document=ReturnDocument.AFTER,
        array_filters=[{"e.x": 1}],
        hint="n_1",
        let={"v": 1},
        comment="why",
        collation={"locale": "fr"},
        maxTimeMS=50,
    )
    assert run_flow(flow, select_for_write(), step) == {"_id": 1, "n": 2}
    assert body(step) == {
        "findAndModify": "coll",
        "query": {"_id": 1},
        "new": True,
        "update": {"$inc": {"n": 1}},
        "let": {"v": 1},
        "maxTimeMS": 50,
        "fields": {"n": 1},
        "sort": {"n": -1},
        "upsert": True,
        "arrayFilters": [{"e.x": 1}],
        "hint": "n_1",
        "collation": {"locale": "fr"},
        "comment": "why",
        "writeConcern": {"w": "majority"},
    }


def test_find_one_and_update_takes_a_pipeline() -> None:
    step = command("findAndModify", {"value": None, "ok": 1})
    flow = collection().find_one_and_update({}, [{"$set": {"a": 1}}])
    assert run_flow(flow, select_for_write(), step) is None
    assert body(step)["update"] == [{"$set": {"a": 1}}]
    assert body(step)["new"] is False and body(step)["upsert"] is False


def test_find_one_and_replace_and_delete() -> None:
    replace = command("findAndModify", {"value": {"_id": 3}, "ok": 1})
    flow = collection().find_one_and_replace({"_id": 3}, {"x": 1}, {"_id": 0}, hint=[("x", 1)])
    assert run_flow(flow, select_for_write(), replace) == {"_id": 3}
    assert body(replace)["update"] == {"x": 1} and body(replace)["fields"] == {"_id": 0}
    assert body(replace)["hint"] == {"x": 1}
    delete = command("findAndModify", {"ok": 1}, body={"remove": True, "update": ABSENT})
    flow = collection().find_one_and_delete({"a": 1}, sort={"a": 1})
    assert run_flow(flow, select_for_write(), delete) is None  # no value: nothing matched
    assert body(delete)["sort"] == {"a": 1}


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda c: c.find_one_and_update([("a", 1)], {"$set": {"a": 1}}), TypeError),
        (lambda c: c.find_one_and_update({}, {"a": 1}), ValueError),
        (lambda c: c.find_one_and_update({}, {"$set": {}}, return_document="after"), TypeError),
        (lambda c: c.find_one_and_update({}, {"$set": {"a": 1}}, upsert="yes"), TypeError),
        (lambda c: c.find_one_and_replace({}, {"$set": {"a": 1}}), ValueError),
        (lambda c: c.find_one_and_delete({}, let=5), TypeError),
        (lambda c: c.find_one_and_delete({}, projection=5), TypeError),
    ],
)
def test_bad_arguments_raise_before_any_flow_runs(call: Any, error: type) -> None:
    with pytest.raises(error):
        call(collection())


def test_array_filters_need_an_acknowledged_write() -> None:
    unacknowledged = collection(write_concern=WriteConcern(w=0))
    with pytest.raises(ConfigurationError):
        unacknowledged.find_one_and_update({}, {"$set": {"a.$[e]": 1}}, array_filters=[{"e": 1}])


def test_write_concern_error_raises() -> None:
    reply = {"value": {"_id": 1}, "writeConcernError": {"code": 64, "errmsg": "timeout"}, "ok": 1}
    flow = collection().find_one_and_delete({"_id": 1})
    with pytest.raises(WriteConcernError) as caught:
        run_flow(flow, select_for_write(), command("findAndModify", reply))
    assert caught.value.code == 64


def test_value_is_decoded_with_the_collections_codec_options() -> None:
    value = uuid.uuid4()
    when = datetime.datetime(2024, 5, 1, 12, 0)
    reply = {"value": {"_id": Binary(value.bytes, 4), "when": when}, "ok": 1}
    options = CodecOptions(uuid_representation=UuidRepresentation.STANDARD, tz_aware=True)
    flow = collection(codec_options=options).find_one_and_delete({})
    document = run_flow(flow, select_for_write(), command("findAndModify", reply))
    assert document["_id"] == value
    assert document["when"] == when.replace(tzinfo=datetime.UTC)


def test_an_unacknowledged_find_one_and_modify_returns_none() -> None:
    reply = {"value": {"_id": 1}, "ok": 1}
    step = command("findAndModify", reply, body={"writeConcern": {"w": 0}, "hint": "_id_"})
    flow = collection(write_concern=WriteConcern(w=0)).find_one_and_delete({}, hint="_id_")
    assert run_flow(flow, select_for_write(), step) is None
