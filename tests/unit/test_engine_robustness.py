"""Bad filters, updates, projections and expressions raise CommandError, never Python errors."""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import Decimal128
from mongo_sansio.testing.engine.aggregate import run_pipeline
from mongo_sansio.testing.engine.errors import CommandError
from mongo_sansio.testing.engine.expressions import evaluate
from mongo_sansio.testing.engine.projection import Projection
from mongo_sansio.testing.engine.query import compile_filter
from mongo_sansio.testing.engine.update import Update
from tests.unit.bson_strategies import shared_scalars

NOW = datetime.datetime(2024, 1, 1)
QUERY_OPERATORS = [
    "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$and", "$or", "$nor", "$not",
    "$exists", "$type", "$regex", "$options", "$elemMatch", "$size", "$all", "$mod", "$expr", "$foo",
]
UPDATE_OPERATORS = [
    "$set", "$unset", "$inc", "$mul", "$min", "$max", "$rename", "$push", "$addToSet", "$pull",
    "$pullAll", "$pop", "$currentDate", "$setOnInsert", "$each", "$slice", "$sort", "$position",
]
EXPRESSION_OPERATORS = [
    "$add", "$subtract", "$multiply", "$divide", "$mod", "$eq", "$cmp", "$and", "$not", "$cond",
    "$ifNull", "$concat", "$toLower", "$size", "$arrayElemAt", "$in", "$type", "$first", "$last",
    "$literal", "$sum", "$avg", "$max", "$let", "$map", "$filter", "$slice", "$abs", "$toString",
    "vars", "in", "input", "as", "cond",
]
names = st.sampled_from(["a", "b", "a.b", "a.0", "_id", "a.$", "a.$[]", "$a", "$$ROOT", "$a.b"])
odd_numbers = st.sampled_from(
    [Decimal128("NaN"), Decimal128("sNaN"), Decimal128("Infinity"), Decimal128("9E6111"),
     float("inf"), float("nan"), 2**63 - 1, -(2**31), 0, -1, 1.5]
)


def trees(operators: list[str]) -> st.SearchStrategy[Any]:
    leaves = st.one_of(shared_scalars, names, odd_numbers)
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, max_size=3),
            st.dictionaries(st.one_of(st.sampled_from(operators), names), children, max_size=3),
        ),
        max_leaves=10,
    )


documents = st.dictionaries(st.sampled_from(["a", "b", "_id"]), trees(["x", "y"]), max_size=3)


def only_command_errors(action: Callable[[], Any]) -> None:
    try:
        action()
    except CommandError:
        pass


@settings(max_examples=int(os.environ.get("ENGINE_FUZZ_EXAMPLES", "400")), suppress_health_check=list(HealthCheck), deadline=None)
@given(documents, trees(QUERY_OPERATORS), trees(UPDATE_OPERATORS), trees(EXPRESSION_OPERATORS), trees(["$slice", "$elemMatch"]))
def test_nothing_but_command_errors_escape(
    document: dict[str, Any], query: Any, update: Any, expression: Any, projection: Any
) -> None:
    filter_ = query if isinstance(query, dict) else None
    if filter_ is not None:
        only_command_errors(lambda: compile_filter(filter_)(document))
    only_command_errors(lambda: Update(update).apply(dict(document), now=NOW, filter=filter_))
    only_command_errors(lambda: evaluate(expression, document))
    if isinstance(projection, dict):
        only_command_errors(lambda: Projection(projection).apply(document, filter=filter_))
    only_command_errors(
        lambda: run_pipeline([document], [{"$group": {"_id": expression, "x": {"$sum": expression}}}, {"$sort": {"a": 1}}])
    )


@pytest.mark.parametrize(
    "action",
    [
        lambda: evaluate({"$add": [Decimal128("sNaN"), 1]}, {}),
        lambda: evaluate({"$multiply": [Decimal128("1E6000"), Decimal128("1E6000")]}, {}),
        lambda: evaluate({"$add": [NOW, float("inf")]}, {}),
        lambda: evaluate({"$subtract": [NOW, 1e300]}, {}),
        lambda: Update({"$mul": {"a": Decimal128("1E6000")}}).apply({"a": Decimal128("1E6000")}),
        lambda: Update({"$pop": {"a": Decimal128("sNaN")}}),
        lambda: compile_filter({"a": {"$mod": [float("nan"), 1]}}),
        lambda: compile_filter({"a": {"$size": float("inf")}}),
        lambda: compile_filter({"a": {"$type": float("nan")}}),
        lambda: Projection({"a": {"$slice": float("inf")}}),
        lambda: run_pipeline([{}], [{"$limit": float("nan")}]),
    ],
)
def test_numeric_edge_cases_are_command_errors_or_values(action: Callable[[], Any]) -> None:
    only_command_errors(action)
