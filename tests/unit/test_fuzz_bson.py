"""The BSON fuzz target's invariant (fuzz/bson_decode.py), run briefly under hypothesis."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from bson_strategies import every_type_documents
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import encode

_TARGET = Path(__file__).resolve().parents[2] / "fuzz" / "bson_decode.py"
_spec = importlib.util.spec_from_file_location("fuzz_bson_decode", _TARGET)
assert _spec is not None and _spec.loader is not None
fuzz_target: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz_target)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes(data: bytes) -> None:
    fuzz_target.check_one(data)


@st.composite
def mutated_documents(draw: st.DrawFn) -> bytes:
    """A valid document with a few bytes overwritten, inserted or cut: near-misses reach deep."""
    data = bytearray(encode(draw(every_type_documents)))
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["set", "insert", "cut"]))
        if action == "set" and position < len(data):
            data[position] = draw(st.integers(0, 255))
        elif action == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=4))
        else:
            del data[position : position + draw(st.integers(1, 4))]
    return bytes(data)


@settings(max_examples=500, deadline=None)
@given(mutated_documents())
def test_mutated_documents(data: bytes) -> None:
    fuzz_target.check_one(data)


@settings(max_examples=100, deadline=None)
@given(every_type_documents)
def test_valid_documents(document: dict[str, Any]) -> None:
    fuzz_target.check_one(encode(document))
