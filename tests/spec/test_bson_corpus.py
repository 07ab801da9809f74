"""The BSON corpus (specifications/source/bson-corpus): every valid, decodeErrors and
parseErrors case, with the corpus README's assertions for valid cases.

Extended JSON is compared as parsed JSON, never as spelling.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from _specs import suite_cases

from mongo_sansio.bson import Decimal128, decode, encode, extjson
from mongo_sansio.bson.errors import BSONError, InvalidBSON

SUITE = "bson-corpus"


def _expand(kind: str) -> Any:
    def expand(path: Path, data: Any) -> Iterable[tuple[str, Any]]:
        for case in data.get(kind, []):
            yield case["description"], {**case, "bson_type": data["bson_type"], "file": path.name}

    return expand


def _parsed(text: str) -> Any:
    """JSON parsed for comparison; NaN-safe because extended JSON keeps NaN in strings."""
    return json.loads(text)


@pytest.mark.spec
@pytest.mark.parametrize("case", suite_cases(SUITE, _expand("valid")))
def test_valid(case: dict[str, Any]) -> None:
    canonical_bson = bytes.fromhex(case["canonical_bson"])
    canonical_extjson = _parsed(case["canonical_extjson"])
    lossy = case.get("lossy", False)

    native = decode(canonical_bson)
    # native_to_bson(bson_to_native(cB)) = cB
    assert encode(native) == canonical_bson
    # native_to_canonical_extended_json(bson_to_native(cB)) = cEJ
    assert _parsed(extjson.dumps(native, mode="canonical")) == canonical_extjson
    # native_to_relaxed_extended_json(bson_to_native(cB)) = rEJ
    if "relaxed_extjson" in case:
        relaxed = _parsed(case["relaxed_extjson"])
        assert _parsed(extjson.dumps(native, mode="relaxed")) == relaxed
        # native_to_relaxed_extended_json(json_to_native(rEJ)) = rEJ
        assert _parsed(extjson.dumps(extjson.loads(case["relaxed_extjson"]), mode="relaxed")) == relaxed

    from_json = extjson.loads(case["canonical_extjson"])
    # native_to_canonical_extended_json(json_to_native(cEJ)) = cEJ
    assert _parsed(extjson.dumps(from_json, mode="canonical")) == canonical_extjson
    if not lossy:
        # native_to_bson(json_to_native(cEJ)) = cB
        assert encode(from_json) == canonical_bson

    if "degenerate_bson" in case:
        degenerate = decode(bytes.fromhex(case["degenerate_bson"]))
        assert encode(degenerate) == canonical_bson
        assert _parsed(extjson.dumps(degenerate, mode="canonical")) == canonical_extjson
    if "degenerate_extjson" in case:
        degenerate_native = extjson.loads(case["degenerate_extjson"])
        assert _parsed(extjson.dumps(degenerate_native, mode="canonical")) == canonical_extjson
        if not lossy:
            assert encode(degenerate_native) == canonical_bson


@pytest.mark.spec
@pytest.mark.parametrize("case", suite_cases(SUITE, _expand("decodeErrors")))
def test_decode_error(case: dict[str, Any]) -> None:
    with pytest.raises(InvalidBSON):
        decode(bytes.fromhex(case["bson"]))


@pytest.mark.spec
@pytest.mark.parametrize("case", suite_cases(SUITE, _expand("parseErrors")))
def test_parse_error(case: dict[str, Any]) -> None:
    if case["bson_type"] == "0x13":
        # Decimal128 files list bad Decimal128 strings, not Extended JSON texts.
        with pytest.raises(BSONError):
            Decimal128(case["string"])
        return
    with pytest.raises(BSONError):
        value = extjson.loads(case["string"])
        # Texts that parse as JSON but hold an unencodable value must fail at encode.
        encode(value)
