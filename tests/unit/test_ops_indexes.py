"""Index management: IndexModel (key specifications, PyMongo's default names and checks), the
createIndexes / listIndexes / dropIndexes bodies, index_information's shape, and the rules for
collections that do not exist."""

from __future__ import annotations

from typing import Any

import pytest
from flow_script import Step, command, cursor_reply, error_reply, run_flow
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.errors import ServerError
from mongo_sansio.flow import RunCommand, SelectServer, ServerInfo
from mongo_sansio.ops.collection import CollectionOps
from mongo_sansio.ops.indexes import IndexModel, index_key_pairs, index_name
from mongo_sansio.ops.write_concern import WriteConcern

PRIMARY_SERVER = ServerInfo(("p", 27017), 21)


def collection(**options: Any) -> CollectionOps:
    return CollectionOps("db", "coll", **options)


def select(for_writes: bool) -> Step:
    def check(request: Any) -> None:
        assert request.for_writes is for_writes, request

    return Step(SelectServer, reply=PRIMARY_SERVER, check=check)


def body(step: Step) -> dict[str, Any]:
    assert isinstance(step.seen, RunCommand)
    return dict(step.seen.body)


# --- IndexModel ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keys", "name", "key"),
    [
        ("x", "x_1", {"x": 1}),
        ([("a", 1), ("b", -1)], "a_1_b_-1", {"a": 1, "b": -1}),
        ({"loc": "2dsphere"}, "loc_2dsphere", {"loc": "2dsphere"}),
        (["a", ("b", "text")], "a_1_b_text", {"a": 1, "b": "text"}),
        ((("h", "hashed"),), "h_hashed", {"h": "hashed"}),
    ],
)
def test_index_model_names_as_pymongo(keys: Any, name: str, key: dict[str, Any]) -> None:
    model = IndexModel(keys)
    assert model.document == {"name": name, "key": key}
    assert list(model.document["key"]) == list(key)  # key order is the index's order


def test_index_model_options() -> None:
    model = IndexModel(
        [("a", 1)],
        name="mine",
        unique=True,
        expireAfterSeconds=3600,
        partialFilterExpression={"a": {"$gt": 1}},
        collation={"locale": "fr"},
        hidden=True,
    )
    assert model.document == {
        "name": "mine",
        "key": {"a": 1},
        "unique": True,
        "expireAfterSeconds": 3600,
        "partialFilterExpression": {"a": {"$gt": 1}},
        "hidden": True,
        "collation": {"locale": "fr"},
    }
    assert IndexModel("a", unique=True) == IndexModel([("a", 1)], unique=True)


@pytest.mark.parametrize(
    ("keys", "error"),
    [
        ([], ValueError),
        ({}, ValueError),
        (5, TypeError),
        ([(1, 1)], TypeError),
        ([("a", 1.5)], TypeError),
        ([("a", 1, 2)], TypeError),
        ([("a", None)], TypeError),
    ],
)
def test_malformed_keys(keys: Any, error: type) -> None:
    with pytest.raises(error):
        IndexModel(keys)


@given(
    st.lists(
        st.tuples(
            st.text(min_size=1, max_size=5),
            st.sampled_from([1, -1, "text", "2d", "2dsphere", "hashed"]),
        ),
        min_size=1,
        max_size=4,
        unique_by=lambda pair: pair[0],
    )
)
def test_default_name_joins_the_pairs(pairs: list[tuple[str, Any]]) -> None:
    assert index_key_pairs(pairs) == pairs
    assert index_name(pairs) == "_".join(f"{f}_{d}" for f, d in pairs)
    assert IndexModel(pairs).document["name"] == index_name(pairs)


# --- commands ------------------------------------------------------------------------------------


def test_create_index_sends_one_model_and_returns_its_name() -> None:
    step = command("createIndexes", db="db")
    coll = collection(write_concern=WriteConcern(w="majority"))
    flow = coll.create_index([("a", 1), ("b", -1)], unique=True, maxTimeMS=10, comment="c")
    assert run_flow(flow, select(True), step) == "a_1_b_-1"
    assert body(step) == {
        "createIndexes": "coll",
        "indexes": [{"name": "a_1_b_-1", "key": {"a": 1, "b": -1}, "unique": True}],
        "maxTimeMS": 10,
        "comment": "c",
        "writeConcern": {"w": "majority"},
    }


def test_create_indexes_returns_every_name_in_order() -> None:
    step = command("createIndexes")
    models = [IndexModel("a"), IndexModel([("b", -1)], name="bee"), IndexModel({"c": "text"})]
    flow = collection().create_indexes(models, commitQuorum="majority")
    assert run_flow(flow, select(True), step) == ["a_1", "bee", "c_text"]
    assert body(step)["commitQuorum"] == "majority"
    assert [index["name"] for index in body(step)["indexes"]] == ["a_1", "bee", "c_text"]


@pytest.mark.parametrize("indexes", [IndexModel("a"), [{"key": {"a": 1}}], ["a"], []])
def test_create_indexes_wants_a_list_of_index_models(indexes: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        collection().create_indexes(indexes)


def test_index_information_has_pymongos_shape() -> None:
    indexes = [
        {"v": 2, "key": {"_id": 1}, "name": "_id_"},
        {"v": 2, "key": {"a": 1, "b": -1}, "name": "a_1_b_-1", "unique": True},
    ]
    step = command("listIndexes", cursor_reply(indexes), body={"listIndexes": "coll", "cursor": {}})
    information = run_flow(collection().index_information(), select(False), step)
    assert information == {
        "_id_": {"v": 2, "key": [("_id", 1)]},
        "a_1_b_-1": {"v": 2, "key": [("a", 1), ("b", -1)], "unique": True},
    }


def test_a_collection_that_does_not_exist_has_no_indexes() -> None:
    missing = command("listIndexes", error_reply(26, name="NamespaceNotFound"))
    cursor = run_flow(collection().list_indexes(comment="c"), select(False), missing)
    assert cursor.exhausted and not cursor.alive
    assert body(missing)["comment"] == "c"
    other = command("listIndexes", error_reply(13, name="Unauthorized"))
    with pytest.raises(ServerError):
        run_flow(collection().list_indexes(), select(False), other)


def test_drop_index_by_name_or_keys() -> None:
    by_name = command("dropIndexes", body={"dropIndexes": "coll", "index": "a_1"})
    run_flow(collection().drop_index("a_1"), select(True), by_name)
    by_keys = command("dropIndexes", body={"index": "a_1_b_-1", "comment": "c"})
    run_flow(collection().drop_index([("a", 1), ("b", -1)], comment="c"), select(True), by_keys)
    every = command("dropIndexes", body={"index": "*", "maxTimeMS": 5})
    run_flow(collection().drop_indexes(maxTimeMS=5), select(True), every)


def test_drop_index_refuses_other_types() -> None:
    with pytest.raises(TypeError):
        collection().drop_index({"a": 1})


def test_dropping_an_index_of_a_missing_collection_is_not_an_error() -> None:
    missing = command("dropIndexes", error_reply(26, errmsg="ns not found"))
    assert run_flow(collection().drop_index("a_1"), select(True), missing) is None
    absent = command("dropIndexes", error_reply(27, name="IndexNotFound"))
    with pytest.raises(ServerError) as caught:
        run_flow(collection().drop_index("a_1"), select(True), absent)
    assert caught.value.code == 27
