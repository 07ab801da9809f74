"""$bucket, $sortByCount and $dateToString, as mongod 7.0 evaluates them."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from mongo_sansio.bson import ObjectId, Timestamp
from mongo_sansio.testing.engine.aggregate import run_pipeline
from mongo_sansio.testing.engine.collation import parse_collation
from mongo_sansio.testing.engine.errors import CommandError
from mongo_sansio.testing.engine.expressions import evaluate

ARTISTS = [
    {"_id": 1, "last": "Bernard", "born": 1887, "nationality": "Swiss"},
    {"_id": 2, "last": "Rippl-Ronai", "born": 1861, "nationality": "Hungarian"},
    {"_id": 3, "last": "Ostroumova", "born": 1871, "nationality": "Russian"},
    {"_id": 4, "last": "Van Gogh", "born": 1853, "nationality": "Dutch"},
    {"_id": 5, "last": "Maurer", "born": 1868, "nationality": "Austrian"},
    {"_id": 6, "last": "Munch", "born": 1863, "nationality": "Norwegian"},
    {"_id": 7, "last": "Redon", "born": 1840, "nationality": "French"},
    {"_id": 8, "last": "Diriks", "born": 1864, "nationality": "Norwegian"},
]


def code_of(pipeline: list[Any], documents: list[dict[str, Any]] | None = None) -> int:
    with pytest.raises(CommandError) as info:
        run_pipeline(ARTISTS if documents is None else documents, pipeline)
    return info.value.code


# --- $bucket ---------------------------------------------------------------------------------


def test_bucket_groups_by_boundaries_with_output_and_default() -> None:
    out = run_pipeline(ARTISTS, [{"$bucket": {
        "groupBy": "$born", "boundaries": [1840, 1850, 1860, 1870, 1880], "default": "Other",
        "output": {"count": {"$sum": 1}, "artists": {"$push": "$last"}},
    }}])
    assert out == [
        {"_id": 1840, "count": 1, "artists": ["Redon"]},
        {"_id": 1850, "count": 1, "artists": ["Van Gogh"]},
        {"_id": 1860, "count": 4, "artists": ["Rippl-Ronai", "Maurer", "Munch", "Diriks"]},
        {"_id": 1870, "count": 1, "artists": ["Ostroumova"]},
        {"_id": "Other", "count": 1, "artists": ["Bernard"]},
    ]


def test_bucket_counts_by_default_and_sends_missing_values_to_the_default() -> None:
    documents = [{"_id": 1, "v": 1}, {"_id": 2, "v": 1.5}, {"_id": 3}, {"_id": 4, "v": "text"}, {"_id": 5, "v": 9}]
    out = run_pipeline(documents, [{"$bucket": {"groupBy": "$v", "boundaries": [0, 2, 10], "default": -1}}])
    assert out == [{"_id": -1, "count": 2}, {"_id": 0, "count": 2}, {"_id": 2, "count": 1}]


def test_bucket_compares_strings_under_the_collation() -> None:
    documents = [{"_id": 1, "s": "B"}, {"_id": 2, "s": "b"}]
    case_insensitive = parse_collation({"locale": "en", "strength": 2})
    out = run_pipeline(documents, [{"$bucket": {"groupBy": "$s", "boundaries": ["a", "b", "c"]}}],
                       collation=case_insensitive)
    assert out == [{"_id": "b", "count": 2}]


def test_a_value_outside_the_boundaries_without_default_fails() -> None:
    assert code_of([{"$bucket": {"groupBy": "$born", "boundaries": [1840, 1880]}}]) == 40066


@pytest.mark.parametrize(("spec", "code"), [
    ("nope", 40201),
    ({"groupBy": "$born", "boundaries": [1, 2], "extra": 1}, 40197),
    ({"groupBy": "$born"}, 40198),
    ({"groupBy": "born", "boundaries": [1, 2]}, 40202),
    ({"groupBy": "$born", "boundaries": 5}, 40200),
    ({"groupBy": "$born", "boundaries": [1]}, 40192),
    ({"groupBy": "$born", "boundaries": [1, "$x"]}, 40191),
    ({"groupBy": "$born", "boundaries": [1, "a"]}, 40193),
    ({"groupBy": "$born", "boundaries": [3, 1]}, 40194),
    ({"groupBy": "$born", "boundaries": [1, 1]}, 40194),
    ({"groupBy": "$born", "boundaries": [1, 5], "default": 3}, 40199),
    ({"groupBy": "$born", "boundaries": [1, 5], "default": "$x"}, 40195),
    ({"groupBy": "$born", "boundaries": [1, 5], "output": 1}, 40196),
])
def test_bucket_parse_errors(spec: Any, code: int) -> None:
    assert code_of([{"$bucket": spec}], []) == code


def test_bucket_mixed_numeric_types_are_one_type() -> None:
    out = run_pipeline([{"v": 1.5}], [{"$bucket": {"groupBy": "$v", "boundaries": [1, 2.5, 4], "default": 10}}])
    assert out == [{"_id": 1, "count": 1}]


# --- $sortByCount ----------------------------------------------------------------------------


def test_sort_by_count_groups_and_orders_by_count_descending() -> None:
    out = run_pipeline(ARTISTS, [{"$sortByCount": "$nationality"}, {"$limit": 1}])
    assert out == [{"_id": "Norwegian", "count": 2}]
    out = run_pipeline(ARTISTS, [{"$sortByCount": {"$lt": ["$born", 1865]}}])
    assert out == [{"_id": True, "count": 5}, {"_id": False, "count": 3}]


@pytest.mark.parametrize(("spec", "code"), [("nationality", 40148), ({"a": 1}, 40147), (5, 40149)])
def test_sort_by_count_parse_errors(spec: Any, code: int) -> None:
    assert code_of([{"$sortByCount": spec}], []) == code


# --- $dateToString ---------------------------------------------------------------------------

WHEN = {"date": datetime.datetime(2014, 1, 1, 8, 15, 39, 736000)}


def render(spec: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    return evaluate({"$dateToString": {"date": "$date", **spec}}, WHEN if root is None else root)


def test_date_to_string_examples_of_the_manual() -> None:
    assert render({"format": "%Y-%m-%d"}) == "2014-01-01"
    assert render({"format": "%H:%M:%S:%L%z", "timezone": "America/New_York"}) == "03:15:39:736-0500"
    assert render({"format": "%Z", "timezone": "America/New_York"}) == "-300"
    assert render({"format": "%b %B"}) == "Jan January"
    assert render({}) == "2014-01-01T08:15:39.736Z"
    assert render({"timezone": "+04:30"}) == "2014-01-01T12:45:39.736"  # no Z with a time zone


def test_date_to_string_week_and_day_specifiers() -> None:
    # 2014-01-01 was a Wednesday; 2016-01-01 a Friday in ISO week 53 of 2015
    assert render({"format": "%j %w %u %U %G %V %%"}) == "001 4 3 00 2014 01 %"
    friday = {"date": datetime.datetime(2016, 1, 1)}
    assert render({"format": "%G-W%V-%u %U %w"}, friday) == "2015-W53-5 00 6"
    sunday = {"date": datetime.datetime(2017, 1, 1)}
    assert render({"format": "%U %w %u"}, sunday) == "01 1 7"


def test_date_to_string_offsets_and_other_date_types() -> None:
    assert render({"format": "%H:%M %z", "timezone": "-0530"}) == "02:45 -0530"
    assert render({"format": "%H %z", "timezone": "+03"}) == "11 +0300"
    assert render({"format": "%Y"}, {"date": Timestamp(0, 1)}) == "1970"
    oid = ObjectId.from_datetime(datetime.datetime(2020, 5, 6, tzinfo=datetime.UTC))
    assert render({"format": "%Y-%m-%d"}, {"date": oid}) == "2020-05-06"


def test_date_to_string_null_handling() -> None:
    assert render({}, {}) is None
    assert render({"onNull": "no date"}, {"date": None}) == "no date"
    assert render({"format": None}) is None
    assert render({"timezone": None}) is None


@pytest.mark.parametrize(("expression", "code"), [
    ({"$dateToString": 1}, 18629),
    ({"$dateToString": {"date": "$date", "extra": 1}}, 18534),
    ({"$dateToString": {"format": "%Y"}}, 18628),
    ({"$dateToString": {"date": "$date", "format": 5}}, 18533),
    ({"$dateToString": {"date": "$date", "format": "%Q"}}, 18536),
    ({"$dateToString": {"date": "$date", "format": "%Y%"}}, 18535),
    ({"$dateToString": {"date": "$date", "timezone": "Mars/Olympus"}}, 40485),
    ({"$dateToString": {"date": "$date", "timezone": 5}}, 40517),
    ({"$dateToString": {"date": "$text"}}, 16006),
])
def test_date_to_string_errors(expression: Any, code: int) -> None:
    with pytest.raises(CommandError) as info:
        evaluate(expression, {**WHEN, "text": "2014"})
    assert info.value.code == code


def test_date_to_string_in_project_add_fields_and_group() -> None:
    documents = [{"_id": 1, **WHEN}, {"_id": 2, "date": datetime.datetime(2014, 1, 1, 23, 0)}]
    day = {"$dateToString": {"date": "$date", "format": "%Y-%m-%d"}}
    assert run_pipeline(documents, [{"$project": {"day": day}}]) == [{"_id": 1, "day": "2014-01-01"},
                                                                    {"_id": 2, "day": "2014-01-01"}]
    assert run_pipeline(documents, [{"$addFields": {"day": day}}, {"$project": {"date": 0}}])[1]["day"] == "2014-01-01"
    in_tokyo = {"$dateToString": {"date": "$date", "format": "%Y-%m-%d", "timezone": "Asia/Tokyo"}}
    assert run_pipeline(documents, [{"$group": {"_id": in_tokyo, "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]) == [
        {"_id": "2014-01-01", "n": 1}, {"_id": "2014-01-02", "n": 1}]
