"""BSON codec benchmark: mongo-sansio against PyMongo's C extension and its pure-Python path.

Run from the repository root::

    python benchmarks/bson_bench.py [--quick]

Inputs: the six BSON micro-benchmark data sets of the MongoDB driver benchmarking spec
(flat_bson, deep_bson, full_bson, small_doc, tweet, large_doc; Extended JSON) from
``$MONGO_SANSIO_BENCH_DATA``, default ``<repo>/../shared/bench-data``.  PyMongo must be
installed (it is the comparison, and its ``json_util`` loads the data).

Output: one table -- data set, operation, MB/s for ours, PyMongo C and PyMongo pure, and our
ratios against both -- then the median ratios per operation with the targets (decode >= 3x
pure and >= 0.35x C; encode >= 2.5x pure and >= 0.3x C), and a lazy-access case: build a
raw document over BSON bytes and read three fields, ours (``RawDocument``) against PyMongo
C's ``RawBSONDocument`` (target >= 1.0).

Method (the spec's, scaled down): each measurement is ``--trials`` trials; a trial encodes
(or decodes) the document ``n`` times, ``n`` calibrated so that a trial lasts about
``--trial-seconds``; the result is the median trial.  Trials run in rounds -- ours, C, pure,
for every case, then again -- so that all three see the same machine (shared machines drift
by 10-20% over a minute).  MB/s counts the document's BSON size per operation.  PyMongo's
pure-Python path runs in a subprocess that blocks the C extension
(``sys.modules["bson._cbson"] = None`` before ``import bson``) and runs trials on request.
Everyone decodes the same bytes (PyMongo's encoding of the data set); we encode the same
values converted to our types.
"""

from __future__ import annotations

import datetime
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from _timing import PureClient, Timer, side_by_side_options

REPO = Path(__file__).resolve().parents[1]
DATA_SETS = ["flat_bson", "deep_bson", "full_bson", "small_doc", "tweet", "large_doc"]
TARGETS = {"encode": (2.5, 0.3), "decode": (3.0, 0.35)}  # (x pure, x C)


def data_dir() -> Path:
    return Path(os.environ.get("MONGO_SANSIO_BENCH_DATA", REPO.parent / "shared" / "bench-data"))


def load_pymongo_documents(bson: Any) -> dict[str, tuple[Any, bytes]]:
    """data set -> (document as PyMongo's json_util loads it, PyMongo's BSON bytes of it)."""
    from bson import json_util

    documents = {}
    for name in DATA_SETS:
        document = json_util.loads((data_dir() / f"{name}.json").read_text(encoding="utf-8"))
        documents[name] = (document, bson.encode(document))
    return documents


def pymongo_timers(bson: Any, trial_seconds: float) -> dict[tuple[str, str], Timer]:
    """(data set, "encode"/"decode") -> a Timer of the imported ``bson`` doing it."""
    timers = {}
    for name, (document, data) in load_pymongo_documents(bson).items():
        timers[name, "encode"] = Timer(bson.encode, document, trial_seconds)
        timers[name, "decode"] = Timer(bson.decode, data, trial_seconds)
    return timers


def pure_worker(trial_seconds: float) -> None:
    """The subprocess side: PyMongo with its C extension blocked.  Reads "<data set> <op>"
    lines, runs one trial of each, answers with the seconds per operation."""
    sys.modules["bson._cbson"] = None  # type: ignore[assignment]
    import bson

    assert bson._USE_C is False, "the C extension is still in use"
    timers = pymongo_timers(bson, trial_seconds)
    print("ready", flush=True)
    for line in sys.stdin:
        name, op = line.split()
        print(repr(timers[name, op].trial()), flush=True)


def to_ours(value: Any) -> Any:
    """A PyMongo value (from json_util) as the equivalent mongo-sansio value."""
    import bson

    from mongo_sansio.bson import types as t
    from mongo_sansio.bson.decimal128 import Decimal128
    from mongo_sansio.bson.objectid import ObjectId

    if isinstance(value, dict):
        return {key: to_ours(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_ours(item) for item in value]
    if type(value) in (bool, int, str, float, bytes, datetime.datetime) or value is None:
        return value  # exact types: PyMongo's Code is a str, its Int64 an int
    if isinstance(value, bson.int64.Int64):
        return t.Int64(value)
    if isinstance(value, bson.objectid.ObjectId):
        return ObjectId(value.binary)
    if isinstance(value, bson.binary.Binary):
        return t.Binary(bytes(value), value.subtype)
    if isinstance(value, bson.code.Code):
        return t.Code(str(value), None if value.scope is None else to_ours(value.scope))
    if isinstance(value, bson.regex.Regex):
        return t.Regex(value.pattern, value.flags)
    if isinstance(value, bson.timestamp.Timestamp):
        return t.Timestamp(value.time, value.inc)
    if isinstance(value, bson.decimal128.Decimal128):
        return Decimal128.from_bid(value.bid)
    if isinstance(value, bson.min_key.MinKey):
        return t.MinKey()
    if isinstance(value, bson.max_key.MaxKey):
        return t.MaxKey()
    raise TypeError(f"no conversion for {type(value)}")


def change_event(full_document: Any, bson: Any) -> dict[str, Any]:
    """A change-stream "update" event around ``full_document`` (PyMongo values)."""
    return {
        "_id": {"_data": "8265A1B2C3000000012B022C0100296E5A1004" + "AB" * 20 + "04"},
        "operationType": "update",
        "clusterTime": bson.timestamp.Timestamp(1705000000, 7),
        "wallTime": datetime.datetime(2024, 1, 11, 19, 6, 40, 123000),
        "ns": {"db": "bench", "coll": "tweets"},
        "documentKey": {"_id": bson.objectid.ObjectId(b"0123456789ab")},
        "updateDescription": {
            "updatedFields": {"retweet_count": 5, "favorited": True},
            "removedFields": [],
            "truncatedArrays": [],
        },
        "fullDocument": full_document,
    }


def lazy_cases(bson: Any, documents: dict[str, tuple[Any, bytes]], trial_seconds: float,
               trials: int) -> list[tuple[str, float, float]]:
    """(case, our ops/s, PyMongo C ops/s): construct a raw document and read three fields."""
    from bson.raw_bson import RawBSONDocument

    from mongo_sansio.bson.raw import RawDocument

    cases = [
        ("change event (tweet)", bson.encode(change_event(documents["tweet"][0], bson)),
         ("operationType", "clusterTime", "documentKey")),
        ("change event (large_doc)", bson.encode(change_event(documents["large_doc"][0], bson)),
         ("operationType", "clusterTime", "documentKey")),
        ("tweet", documents["tweet"][1], ("id", "text", "user")),
    ]
    results = []
    for label, data, keys in cases:

        def ours(data: bytes, keys: tuple[str, str, str] = keys) -> Any:
            document = RawDocument(data)
            return document[keys[0]], document[keys[1]], document[keys[2]]

        def theirs(data: bytes, keys: tuple[str, str, str] = keys) -> Any:
            document = RawBSONDocument(data)
            return document[keys[0]], document[keys[1]], document[keys[2]]

        ours_timer, theirs_timer = Timer(ours, data, trial_seconds), Timer(theirs, data, trial_seconds)
        for _ in range(trials):
            ours_timer.trial()
            theirs_timer.trial()
        results.append((label, 1 / ours_timer.median(), 1 / theirs_timer.median()))
    return results


def verdict(ratio: float, target: float) -> str:
    return f"target >= {target}x: {'met' if ratio >= target else 'NOT met'}"


def main() -> None:
    trial_seconds, trials, is_pure_worker = side_by_side_options(__doc__.split("\n\n")[0])
    if is_pure_worker:
        pure_worker(trial_seconds)
        return

    sys.path.insert(0, str(REPO))
    import bson

    from mongo_sansio.bson._decode import decode
    from mongo_sansio.bson._encode import encode

    assert bson._USE_C, "PyMongo's C extension is not available"
    print(f"data: {data_dir()}  trials: {trials} x ~{trial_seconds}s, interleaved  "
          f"python {sys.version.split()[0]}")
    pure = PureClient(__file__, trial_seconds)
    documents = load_pymongo_documents(bson)
    c_ext = pymongo_timers(bson, trial_seconds)
    ours: dict[tuple[str, str], Timer] = {}
    for name, (document, data) in documents.items():
        ours_document = to_ours(document)
        # sanity: our bytes are PyMongo's once _id is put first as PyMongo does
        reordered = dict(ours_document)
        if "_id" in reordered:
            reordered = {"_id": reordered.pop("_id"), **reordered}
        assert encode(reordered) == data, f"{name}: our encoding differs from PyMongo's"
        ours[name, "encode"] = Timer(encode, ours_document, trial_seconds)
        ours[name, "decode"] = Timer(decode, data, trial_seconds)
    # rounds: every implementation gets one trial of every case per round
    for _ in range(trials):
        for name, op in ours:
            ours[name, op].trial()
            c_ext[name, op].trial()
            pure.trial(name, op)
    pure.close()

    rows = []
    ratios: dict[str, list[tuple[float, float]]] = {"encode": [], "decode": []}
    for op in ("encode", "decode"):
        for name, (_, data) in documents.items():
            mb = len(data) / 1e6
            o, c, p = (mb / ours[name, op].median(), mb / c_ext[name, op].median(),
                       mb / pure.median(name, op))
            ratios[op].append((o / p, o / c))
            rows.append((name, op, o, c, p, o / p, o / c))
    header = (f"{'data set':<11} {'op':<7} {'ours MB/s':>10} {'C MB/s':>9} {'pure MB/s':>10} "
              f"{'vs pure':>8} {'vs C':>6}")
    print(header)
    print("-" * len(header))
    for name, op, o, c, p, vs_pure, vs_c in rows:
        print(f"{name:<11} {op:<7} {o:>10.1f} {c:>9.1f} {p:>10.1f} {vs_pure:>7.2f}x {vs_c:>5.2f}x")
    print()
    for op in ("encode", "decode"):
        med_pure = statistics.median(r[0] for r in ratios[op])
        med_c = statistics.median(r[1] for r in ratios[op])
        want_pure, want_c = TARGETS[op]
        print(f"{op}: median {med_pure:.2f}x pure ({verdict(med_pure, want_pure)}), "
              f"{med_c:.2f}x C ({verdict(med_c, want_c)})")
    print()
    print(f"{'lazy access: construct + 3 lookups':<38} {'ours ops/s':>11} {'C ops/s':>11} {'ratio':>6}")
    for label, ours_rate, c_rate in lazy_cases(bson, documents, trial_seconds, trials):
        ratio = ours_rate / c_rate
        print(f"{label:<38} {ours_rate:>11,.0f} {c_rate:>11,.0f} {ratio:>5.2f}x  ({verdict(ratio, 1.0)})")


if __name__ == "__main__":
    main()
