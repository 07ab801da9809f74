"""Properties of the data engine, checked with hypothesis over values of every BSON type."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import Decimal128, Int64, Regex
from mongo_sansio.testing.engine.collection import Collection
from mongo_sansio.testing.engine.order import compare, hashable_key, sort_key, strict_equal
from mongo_sansio.testing.engine.projection import project
from mongo_sansio.testing.engine.query import matches
from mongo_sansio.testing.engine.update import Update
from tests.unit.bson_strategies import all_scalars, shared_scalars

numbers = st.one_of(
    st.integers(-(2**70), 2**70),
    st.integers(-(2**63), 2**63 - 1).map(Int64),
    st.floats(),
    st.decimals(allow_nan=False, places=4, min_value=-(10**20), max_value=10**20).map(lambda d: Decimal128(str(d))),
    st.sampled_from([Decimal128("NaN"), Decimal128("Infinity"), Decimal128("-Infinity"), Decimal128("-0")]),
)
values = st.recursive(
    st.one_of(all_scalars, numbers),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from("abc"), children, max_size=3),
    ),
    max_leaves=8,
)
field_names = st.text(alphabet="abcxyz", min_size=1, max_size=3)
query_values = st.recursive(
    st.one_of(shared_scalars.filter(lambda v: not isinstance(v, Regex)), numbers),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(field_names, children, max_size=3)
    ),
    max_leaves=6,
)
documents = st.dictionaries(field_names, query_values, max_size=5)


@settings(max_examples=300)
@given(values, values)
def test_compare_is_antisymmetric(a: Any, b: Any) -> None:
    assert compare(a, b) == -compare(b, a)


@settings(max_examples=300)
@given(values, values, values)
def test_compare_is_transitive(a: Any, b: Any, c: Any) -> None:
    x, y, z = sorted([a, b, c], key=sort_key)
    assert compare(x, y) <= 0 and compare(y, z) <= 0
    assert compare(x, z) <= 0


@settings(max_examples=300)
@given(values, values)
def test_equality_agrees_with_hashable_keys(a: Any, b: Any) -> None:
    assert (compare(a, b) == 0) == (hashable_key(a) == hashable_key(b))


@given(values)
def test_every_value_equals_itself(a: Any) -> None:
    assert compare(a, a) == 0


@settings(max_examples=200)
@given(documents, field_names, query_values)
def test_in_with_one_value_is_eq(document: dict[str, Any], field: str, value: Any) -> None:
    assert matches(document, {field: {"$in": [value]}}) == matches(document, {field: {"$eq": value}})


@settings(max_examples=200)
@given(documents, field_names, query_values)
def test_set_then_match_on_the_set_path(document: dict[str, Any], field: str, value: Any) -> None:
    Update({"$set": {field: value}}).apply(document)
    assert matches(document, {field: {"$eq": value}})
    assert not matches(document, {field: {"$ne": value}})


def _field_paths(value: Any, prefix: str = "") -> set[str]:
    paths: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            paths.add(prefix + key)
            paths |= _field_paths(item, prefix + key + ".")
    elif isinstance(value, list):
        for item in value:
            paths |= _field_paths(item, prefix)
    return paths


@settings(max_examples=200)
@given(documents, st.lists(st.lists(field_names, min_size=1, max_size=3).map(".".join), max_size=4), st.booleans())
def test_projection_never_invents_fields(document: dict[str, Any], fields: list[str], include: bool) -> None:
    # drop paths that collide with each other (a and a.b): mongod refuses those
    chosen: list[str] = []
    for f in fields:
        if not any(f == c or f.startswith(c + ".") or c.startswith(f + ".") for c in chosen):
            chosen.append(f)
    out = project(document, {f: int(include) for f in chosen})
    assert _field_paths(out) <= _field_paths(document)


@settings(max_examples=200)
@given(
    st.lists(documents, max_size=5),
    shared_scalars.filter(lambda v: not isinstance(v, Regex)),
    documents,
)
def test_insert_then_find_by_id_returns_the_document(
    others: list[dict[str, Any]], id_value: Any, body: dict[str, Any]
) -> None:
    counter = itertools.count()
    generated = [Int64(-(2**62) - n) for n in range(len(others))]
    assume(all(compare(g, id_value) != 0 for g in generated))
    collection = Collection("db", "c", id_factory=lambda: generated[next(counter)])
    for other in others:
        other.pop("_id", None)
        collection.insert_one(other)
    document = {"_id": id_value, **{k: v for k, v in body.items() if k != "_id"}}
    collection.insert_one(document)
    found = collection.find({"_id": {"$eq": id_value}})
    assert len(found) == 1
    assert strict_equal(found[0], document)
