"""$lookup's pipeline and concise forms, with let variables, as mongod 5.0+ runs them."""

from __future__ import annotations

from typing import Any

import pytest

from mongo_sansio.testing.engine.aggregate import run_pipeline
from mongo_sansio.testing.engine.errors import CommandError

ORDERS = [
    {"_id": 1, "item": "almonds", "price": 12, "ordered": 2},
    {"_id": 2, "item": "pecans", "price": 20, "ordered": 1},
    {"_id": 3, "item": "almonds", "price": 10, "ordered": 60},
]
STOCK = [
    {"_id": 1, "stock_item": "almonds", "instock": 120},
    {"_id": 2, "stock_item": "pecans", "instock": 80},
    {"_id": 3, "stock_item": "almonds", "instock": 60},
    {"_id": 4, "stock_item": "cashews", "instock": 60},
]


def lookup(name: str) -> list[dict[str, Any]]:
    return {"warehouses": STOCK, "orders": ORDERS}[name]


def run(pipeline: list[Any], documents: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    return run_pipeline(ORDERS if documents is None else documents, pipeline, lookup=lookup)


def code_of(pipeline: list[Any]) -> int:
    with pytest.raises(CommandError) as info:
        run(pipeline)
    return info.value.code


def test_let_and_pipeline_join_on_several_conditions() -> None:
    out = run([{"$lookup": {
        "from": "warehouses",
        "let": {"order_item": "$item", "order_qty": "$ordered"},
        "pipeline": [
            {"$match": {"$expr": {"$and": [{"$eq": ["$stock_item", "$$order_item"]},
                                           {"$gte": ["$instock", "$$order_qty"]}]}}},
            {"$project": {"stock_item": 0, "_id": 0}},
        ],
        "as": "stockdata",
    }}])
    assert [o["stockdata"] for o in out] == [
        [{"instock": 120}, {"instock": 60}], [{"instock": 80}], [{"instock": 120}, {"instock": 60}],
    ]


def test_a_pipeline_without_let_joins_every_document_and_may_be_uncorrelated() -> None:
    out = run([{"$lookup": {"from": "warehouses", "pipeline": [{"$match": {"instock": 60}}, {"$count": "n"}],
                            "as": "sixty"}}])
    assert all(o["sixty"] == [{"n": 2}] for o in out)


def test_the_concise_form_matches_on_equality_then_runs_the_pipeline() -> None:
    out = run([{"$lookup": {
        "from": "warehouses", "localField": "item", "foreignField": "stock_item",
        "let": {"qty": "$ordered"},
        "pipeline": [{"$match": {"$expr": {"$gte": ["$instock", "$$qty"]}}}, {"$project": {"_id": 1}}],
        "as": "enough",
    }}])
    assert [o["enough"] for o in out] == [[{"_id": 1}, {"_id": 3}], [{"_id": 2}], [{"_id": 1}, {"_id": 3}]]


def test_let_variables_reach_nested_lookups_and_a_documents_source() -> None:
    out = run([{"$lookup": {
        "let": {"price": "$price"},
        "pipeline": [{"$documents": [{"rate": 2}, {"rate": 3}]},
                     {"$project": {"_id": 0, "total": {"$multiply": ["$rate", "$$price"]}}}],
        "as": "quotes",
    }}], [ORDERS[0]])
    assert out[0]["quotes"] == [{"total": 24}, {"total": 36}]
    nested = run([{"$lookup": {
        "from": "warehouses", "let": {"item": "$item"},
        "pipeline": [
            {"$match": {"$expr": {"$eq": ["$stock_item", "$$item"]}}},
            {"$lookup": {"from": "orders", "let": {"stocked": "$stock_item"},
                         "pipeline": [{"$match": {"$expr": {"$and": [{"$eq": ["$item", "$$stocked"]},
                                                                     {"$eq": ["$item", "$$item"]}]}}},
                                      {"$project": {"_id": 1}}],
                         "as": "orders"}},
            {"$project": {"_id": 1, "orders": 1}},
        ],
        "as": "stock",
    }}], [ORDERS[1]])
    assert nested[0]["stock"] == [{"_id": 2, "orders": [{"_id": 2}]}]


def test_a_missing_let_field_is_null() -> None:
    out = run([{"$lookup": {"from": "warehouses", "let": {"x": "$nope"},
                            "pipeline": [{"$match": {"$expr": {"$eq": ["$$x", None]}}}, {"$count": "n"}],
                            "as": "j"}}], [{"_id": 1}])
    assert out[0]["j"] == [{"n": 4}]


@pytest.mark.parametrize(("spec", "code"), [
    ({"from": "warehouses", "localField": "item", "as": "j"}, 9),
    ({"from": "warehouses", "as": "j"}, 9),
    ({"from": "warehouses", "pipeline": [], "unknown": 1, "as": "j"}, 9),
    ({"from": "warehouses", "pipeline": []}, 9),
    ({"from": "warehouses", "pipeline": {}, "as": "j"}, 9),
    ({"from": "warehouses", "let": [], "pipeline": [], "as": "j"}, 9),
    ({"from": "warehouses", "let": {"Bad": 1}, "pipeline": [], "as": "j"}, 16867),
    ({"from": "warehouses", "pipeline": [{"$out": "x"}], "as": "j"}, 51047),
    ({"from": "warehouses", "pipeline": [{"$bogus": 1}], "as": "j"}, 40324),
    ({"pipeline": [{"$match": {}}], "as": "j"}, 9),
])
def test_bad_specifications_fail_before_any_document(spec: dict[str, Any], code: int) -> None:
    assert code_of([{"$lookup": spec}]) == code
