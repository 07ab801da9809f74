"""The command line: Extended JSON to BSON and back, and clean failures on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mongo_sansio.adapters.cli import main
from mongo_sansio.bson import decode_all, encode

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "change_events.jsonl"


def test_load_then_dump_round_trips_the_examples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "events.bson"
    assert main(["bson", "load", str(EXAMPLES), "-o", str(out)]) == 0
    documents = decode_all(out.read_bytes())
    assert [d["operationType"] for d in documents] == ["insert", "update", "delete"]

    assert main(["bson", "dump", "--canonical", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    first = json.loads(lines[0])
    assert first["fullDocument"]["customer"]["id"] == {"$numberLong": "9007199254740993"}
    assert first["fullDocument"]["price"] == {"$numberDecimal": "12.50"}


def test_dump_of_truncated_bson_fails_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.bson"
    bad.write_bytes(encode({"a": 1}) + encode({"b": "xyz"})[:-3])
    assert main(["bson", "dump", str(bad)]) == 1
    captured = capsys.readouterr()
    assert captured.out.count("\n") == 1  # the good document was printed first
    assert "document 2" in captured.err and "invalid BSON" in captured.err
    assert "Traceback" not in captured.err


def test_load_of_bad_extended_json_fails_cleanly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": {"$numberLong": "not a number"}}\n')
    assert main(["bson", "load", str(bad), "-o", str(tmp_path / "out.bson")]) == 1
    assert "mongo-sansio:" in capsys.readouterr().err


def test_installed_entry_point_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mongo_sansio.adapters.cli", "bson", "dump", "-"],
        input=encode({"x": 1}), capture_output=True, check=True,
    )
    assert json.loads(result.stdout) == {"x": 1}
