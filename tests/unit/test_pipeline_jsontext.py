"""The stream's fast relaxed Extended JSON writer gives exactly the general writer's text: on
every valid document of the bson-corpus, on documents of every common type, and on the values
it must hand to the general writer (string subclasses, non-finite doubles, other mappings)."""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import Any

import pytest

from mongo_sansio.bson import (
    Binary,
    Code,
    Decimal128,
    Int64,
    MaxKey,
    ObjectId,
    Regex,
    Symbol,
    Timestamp,
    decode,
    encode,
    extjson,
)
from mongo_sansio.pipeline.jsontext import relaxed_json

SPECS = Path(os.environ.get("MONGO_SANSIO_SPECS", Path(__file__).resolve().parents[3] / "shared" / "specs"))
CORPUS = SPECS / "bson-corpus" / "tests"


def corpus_documents() -> list[Any]:
    if not CORPUS.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"bson-corpus not found at {CORPUS}"))]
    cases = []
    for path in sorted(CORPUS.glob("*.json")):
        for case in json.loads(path.read_text(encoding="utf-8")).get("valid", []):
            cases.append(pytest.param(case["canonical_bson"], id=f"{path.stem}: {case['description']}"))
    return cases


@pytest.mark.parametrize("hex_bson", corpus_documents())
def test_the_bson_corpus_renders_as_the_general_writer_does(hex_bson: str) -> None:
    document = decode(bytes.fromhex(hex_bson))
    assert relaxed_json(document) == extjson.dumps(document, mode="relaxed")


EXAMPLES: list[Any] = [
    {"_id": 7, "name": "user 7", "tags": ["a", "b"], "score": 10.5, "address": {"city": "Lyon"}},
    {"_id": ObjectId("65a0b1c2d3e4f5a6b7c8d9e0"), "at": datetime.datetime(2024, 1, 2, 3, 4, 5, 678000),
     "whole second": datetime.datetime(2024, 1, 2, 3, 4, 5), "sub ms": datetime.datetime(2024, 1, 2, 0, 0, 0, 999),
     "before 1970": datetime.datetime(1960, 5, 1), "aware": datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC),
     "n": Int64(2**40), "neg zero": -0.0, "big": 1e300, "tiny": 5e-324, "s": "héllo \u2028 \x00 \x1f \"q\"",
     "b": True, "none": None, "arr": [1, [2, [3]], {"q": "r"}, []], "empty": {},
     "dec": Decimal128("1.10"), "bin": Binary(b"\x00\xff", 4), "bytes": b"ab", "ts": Timestamp(1, 2)},
    [1, "two", {"three": 3.0}],
    {"code": Code("x = 1")},
    {"nested": {"symbol": Symbol("y")}},
    {"nan": float("nan")},
    {"deep": [{"inf": float("-inf")}]},
    {"regex": Regex("^a", "im"), "max": MaxKey()},
    {"tuple": (1, 2)},
    "a plain string",
    42,
    None,
]


@pytest.mark.parametrize("value", EXAMPLES, ids=range(len(EXAMPLES)))
def test_values_render_as_the_general_writer_does(value: Any) -> None:
    assert relaxed_json(value) == extjson.dumps(value, mode="relaxed")
    if isinstance(value, dict):
        decoded = decode(encode(value))  # what a reader holds
        assert relaxed_json(decoded) == extjson.dumps(decoded, mode="relaxed")


def test_a_dict_subclass_is_walked_by_the_general_writer() -> None:
    class Document(dict[str, Any]):
        pass

    value = Document(code=Code("x"))
    assert relaxed_json(value) == extjson.dumps(value, mode="relaxed")
    assert '"$code"' in relaxed_json(value)
