"""Parse modes: what a document that does not fit its schema becomes (pure; no Spark)."""

from __future__ import annotations

import pytest

from mongo_sansio.bson import ObjectId
from mongo_sansio.pipeline.jsontext import relaxed_json
from mongo_sansio.pipeline.parse_modes import (
    CORRUPT_RECORD,
    ParseMode,
    Tally,
    parse_mode,
    tolerant_row_converter,
)
from mongo_sansio.pipeline.schema import Field, Kind, SchemaMismatch, Struct

SCHEMA = Struct((
    Field("_id", Kind.INT),
    Field("qty", Kind.INT),
    Field("where", Struct((Field("city", Kind.STRING), Field("zip", Kind.INT)))),
    Field(CORRUPT_RECORD, Kind.JSON),
))
GOOD = {"_id": 1, "qty": 5, "where": {"city": "Oslo"}}
BAD = {"_id": 2, "qty": "five", "where": {"city": "Rome"}, "extra": ObjectId("0" * 24)}
NESTED_BAD = {"_id": 3, "qty": 1, "where": {"city": "Bern", "zip": "not a number"}}  # inside


def test_failfast_raises_naming_the_field() -> None:
    row = tolerant_row_converter(SCHEMA, ParseMode.FAILFAST)
    assert row(GOOD) == [1, 5, {"city": "Oslo", "zip": None}, None]
    with pytest.raises(SchemaMismatch, match="qty"):
        row(BAD)


def test_permissive_nulls_the_misfits_and_keeps_the_document() -> None:
    tally = Tally()
    row = tolerant_row_converter(SCHEMA, ParseMode.PERMISSIVE, tally=tally)
    assert row(GOOD) == [1, 5, {"city": "Oslo", "zip": None}, None]
    assert row(BAD) == [2, None, {"city": "Rome", "zip": None}, relaxed_json(BAD)]
    assert row(NESTED_BAD) == [3, 1, None, relaxed_json(NESTED_BAD)]  # the field, whole
    assert tally == Tally(dropped=0, marked=2)


def test_permissive_without_the_column_only_nulls() -> None:
    schema = Struct(SCHEMA.fields[:3])
    assert tolerant_row_converter(schema, ParseMode.PERMISSIVE)(BAD) == [2, None, {"city": "Rome", "zip": None}]


def test_a_renamed_corrupt_column() -> None:
    schema = Struct((*SCHEMA.fields[:3], Field("broken", Kind.JSON)))
    row = tolerant_row_converter(schema, ParseMode.PERMISSIVE, "broken")
    assert row(BAD)[-1] == relaxed_json(BAD)


def test_dropmalformed_drops_and_counts() -> None:
    tally = Tally()
    row = tolerant_row_converter(SCHEMA, ParseMode.DROPMALFORMED, tally=tally)
    assert [row(d) for d in (GOOD, BAD, NESTED_BAD)] == [[1, 5, {"city": "Oslo", "zip": None}, None], None, None]
    assert tally == Tally(dropped=2, marked=0)


@pytest.mark.parametrize(("text", "mode"), [(None, ParseMode.FAILFAST), ("permissive", ParseMode.PERMISSIVE),
                                            (" DropMalformed ", ParseMode.DROPMALFORMED)])
def test_mode_names(text: str | None, mode: ParseMode) -> None:
    assert parse_mode(text) is mode


def test_an_unknown_mode_is_named() -> None:
    with pytest.raises(ValueError, match="mode"):
        parse_mode("lenient")
