"""What a document that does not fit its schema becomes: Spark's parse modes.

Input: a schema (:class:`~mongo_sansio.pipeline.schema.Struct`), a mode and the name of the
corrupt-record column; then documents.  Output: per document its column values, or None when
the document is dropped, and a tally of what was dropped or marked.

* ``FAILFAST`` (the default): a misfit raises :class:`~mongo_sansio.pipeline.schema.SchemaMismatch`
  naming the field, as the converters always did.
* ``PERMISSIVE``: every top-level field whose value does not fit is null (a document column
  with one misfit inside is null whole), and the corrupt-record column, when the schema has
  it, holds the whole document as relaxed Extended JSON; fitting documents leave it null.
* ``DROPMALFORMED``: a document with any misfit is left out.

The same rules as Spark's JSON and CSV readers, at the granularity of top-level fields.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from mongo_sansio.pipeline.jsontext import relaxed_json
from mongo_sansio.pipeline.schema import Kind, SchemaMismatch, Struct, converter

__all__ = ["CORRUPT_RECORD", "ParseMode", "Tally", "parse_mode", "tolerant_row_converter"]

#: Spark's default name of the corrupt-record column
CORRUPT_RECORD = "_corrupt_record"


class ParseMode(enum.Enum):
    FAILFAST = "FAILFAST"
    PERMISSIVE = "PERMISSIVE"
    DROPMALFORMED = "DROPMALFORMED"


def parse_mode(text: str | None) -> ParseMode:
    """The mode named by ``text`` (any case); FAILFAST when absent."""
    if text is None:
        return ParseMode.FAILFAST
    try:
        return ParseMode(text.strip().upper())
    except ValueError:
        names = ", ".join(mode.value for mode in ParseMode)
        raise ValueError(f"mode: expected one of {names}, got {text!r}") from None


@attrs.define
class Tally:
    """How many documents a mode dropped or marked (PERMISSIVE) so far."""

    dropped: int = 0
    marked: int = 0


def tolerant_row_converter(
    schema: Struct, mode: ParseMode, corrupt_column: str = CORRUPT_RECORD, tally: Tally | None = None
) -> Callable[[Mapping[str, Any]], list[Any] | None]:
    """A document to its column values under ``mode`` (None: dropped).  The corrupt-record
    column is filled only when the schema has it as a string column."""
    fields = [(item.name, converter(item.type)) for item in schema.fields]
    corrupt_index = next(
        (
            index
            for index, item in enumerate(schema.fields)
            if item.name == corrupt_column and item.type in (Kind.JSON, Kind.STRING)
        ),
        None,
    )
    counts = tally if tally is not None else Tally()

    def row(document: Mapping[str, Any]) -> list[Any] | None:
        values: list[Any] = []
        misfit = False
        for index, (name, convert) in enumerate(fields):
            if index == corrupt_index:
                values.append(None)
                continue
            try:
                values.append(convert(document.get(name), name))
            except SchemaMismatch:
                if mode is ParseMode.FAILFAST:
                    raise
                misfit = True
                values.append(None)
        if not misfit:
            return values
        if mode is ParseMode.DROPMALFORMED:
            counts.dropped += 1
            return None
        counts.marked += 1
        if corrupt_index is not None:
            values[corrupt_index] = relaxed_json(dict(document))
        return values

    return row
