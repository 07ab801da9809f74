"""Wire benchmark: mongo-sansio's OP_MSG framing against pymongo.message (C and pure Python).

Run from the repository root::

    python benchmarks/wire_bench.py [--quick]

Workloads:

* encode a find command (``find`` + filter + limit + ``$db``) as OP_MSG;
* encode an insert of 100 small documents (the spec's ``small_doc`` data set) as OP_MSG with a
  ``documents`` kind-1 sequence; and the same insert with the documents already encoded
  (ours: ``RawDocument``; PyMongo: ``RawBSONDocument``, which its C encoder copies as they
  are), so
  that only the small command body is BSON work -- framing alone;
* decode an OP_MSG reply holding a cursor of 100 tweets (the ``tweet`` data set), eagerly;
  and the same reply framed only (ours with lazy RawDocuments, PyMongo's ``_OpMsg.unpack``
  without decoding), which measures framing alone.

Data: ``$MONGO_SANSIO_BENCH_DATA``, default ``<repo>/../shared/bench-data`` (Extended JSON,
loaded with PyMongo's ``json_util``).  PyMongo must be installed: it is the comparison.

Output: microseconds per message for ours, PyMongo C and PyMongo pure, for the whole
operation and for its BSON part alone (the same documents encoded or decoded by the same
library's BSON codec); the difference is the *framing overhead* (header, flags, sections,
buffering, message objects).  The target: our framing overhead at most 1.2x PyMongo C's per
message.  The ``insert100`` "BSON alone" rows encode the 100 documents in one call (as an
array), so that no per-call overhead is counted as BSON.  Read ``reply100``'s framing row with
care: decoding is nearly all of that row and the difference of two medians is noise (it can
come out negative); ``reply100-frame`` measures reply framing directly.
Differences of two medians are noisy at the microsecond scale; compare within one run.

Method: as ``bson_bench.py`` -- trials calibrated to ``--trial-seconds``, interleaved rounds of
ours / C / pure, the median trial.  PyMongo's pure path runs in a subprocess that blocks both
C extensions (``bson._cbson`` and ``pymongo._cmessage``).
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path
from typing import Any

from _timing import PureClient, Timer, side_by_side_options

REPO = Path(__file__).resolve().parents[1]
CASES = ["find", "insert100", "insert100-raw", "reply100", "reply100-frame"]
TARGET = 1.2  # our framing overhead / PyMongo C's, at most


def data_dir() -> Path:
    return Path(os.environ.get("MONGO_SANSIO_BENCH_DATA", REPO.parent / "shared" / "bench-data"))


def load(name: str) -> Any:
    from bson import json_util

    return json_util.loads((data_dir() / f"{name}.json").read_text(encoding="utf-8"))


def pymongo_inputs() -> dict[str, Any]:
    """The workloads' documents as PyMongo values, and the reply bytes everyone decodes."""
    import bson

    small = load("small_doc")
    tweet = load("tweet")
    find = {"find": "coll", "filter": {"status": "A", "qty": {"$lt": 30}}, "limit": 10}
    docs = [dict(small, _id=i) for i in range(100)]
    reply_body = {"cursor": {"firstBatch": [tweet] * 100, "id": 0, "ns": "db.coll"}, "ok": 1.0}
    payload = struct.pack("<IB", 0, 0) + bson.encode(reply_body)
    reply = struct.pack("<iiii", 16 + len(payload), 2, 1, 2013) + payload
    return {"find": find, "docs": docs, "reply": reply}


def pymongo_timers(trial_seconds: float) -> dict[tuple[str, str], Timer]:
    """(case, "total"/"bson") -> a Timer of the imported PyMongo doing it."""
    import bson
    import pymongo.message as message
    from bson.codec_options import DEFAULT_CODEC_OPTIONS

    inputs = pymongo_inputs()
    opts = DEFAULT_CODEC_OPTIONS
    reply_opts = message._UNICODE_REPLACE_CODEC_OPTIONS  # what unpack_response decodes with
    find = dict(inputs["find"], **{"$db": "test"})
    insert = {"insert": "coll", "documents": inputs["docs"], "ordered": True}
    reply: bytes = inputs["reply"]
    unpack_header = struct.Struct("<iiii").unpack_from

    def encode_find(cmd: dict) -> Any:
        return message._op_msg(0, cmd, "test", None, opts)

    def encode_insert(cmd: dict) -> Any:
        return message._op_msg(0, cmd, "test", None, opts)

    def bson_insert(cmd: dict) -> Any:
        # the documents in one encoder call (an array), so no per-call overhead is counted
        body = {k: v for k, v in cmd.items() if k != "documents"}
        return bson.encode(body), bson.encode({"d": cmd["documents"]})

    from bson.raw_bson import RawBSONDocument

    raw_insert = dict(
        insert, documents=[RawBSONDocument(bson.encode(d)) for d in insert["documents"]]
    )
    raw_body = {"insert": "coll", "ordered": True, "$db": "test"}

    def decode_reply(data: bytes) -> Any:
        unpack_header(data, 0)
        return message._OpMsg.unpack(memoryview(data)[16:]).unpack_response()

    def frame_reply(data: bytes) -> Any:
        unpack_header(data, 0)
        return message._OpMsg.unpack(memoryview(data)[16:])

    def bson_reply(data: bytes) -> Any:
        return bson.decode_all(data[21:], reply_opts)

    return {
        ("find", "total"): Timer(encode_find, find, trial_seconds),
        ("find", "bson"): Timer(bson.encode, find, trial_seconds),
        ("insert100", "total"): Timer(encode_insert, insert, trial_seconds),
        ("insert100", "bson"): Timer(bson_insert, insert, trial_seconds),
        ("insert100-raw", "total"): Timer(encode_insert, raw_insert, trial_seconds),
        ("insert100-raw", "bson"): Timer(bson.encode, raw_body, trial_seconds),
        ("reply100", "total"): Timer(decode_reply, reply, trial_seconds),
        ("reply100", "bson"): Timer(bson_reply, reply, trial_seconds),
        ("reply100-frame", "total"): Timer(frame_reply, reply, trial_seconds),
        ("reply100-frame", "bson"): Timer(lambda _: None, None, trial_seconds),
    }


def our_timers(trial_seconds: float) -> dict[tuple[str, str], Timer]:
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bson_bench import to_ours

    from mongo_sansio.bson import RawDocument, decode, encode
    from mongo_sansio.wire import MessageReader, OpMsg, encode_op_msg

    inputs = pymongo_inputs()
    find = dict(to_ours(inputs["find"]), **{"$db": "test"})
    docs = [to_ours(d) for d in inputs["docs"]]
    insert_body = {"insert": "coll", "ordered": True, "$db": "test"}
    # like-for-like with PyMongo's RawBSONDocument: already-encoded documents, checked when
    # they were built (a list of plain ``bytes`` is checked per message instead)
    raw_docs = [RawDocument(encode(d)) for d in docs]
    reply: bytes = inputs["reply"]

    def encode_find(body: dict) -> bytes:
        return encode_op_msg(body, request_id=1)

    def encode_insert(documents: list) -> bytes:
        return encode_op_msg(insert_body, request_id=1, sequences={"documents": documents})

    def bson_insert(documents: list) -> Any:
        return encode(insert_body), encode({"d": documents})  # as PyMongo's row: one call

    def decode_reply(data: bytes, reader: MessageReader = MessageReader()) -> Any:  # noqa: B008
        reader.receive_data(data)
        return reader.next_message()

    def frame_reply(data: bytes, reader: MessageReader = MessageReader(lazy=True)) -> Any:  # noqa: B008
        reader.receive_data(data)
        return reader.next_message()

    check = decode_reply(reply)
    assert isinstance(check, OpMsg) and len(check.body["cursor"]["firstBatch"]) == 100

    return {
        ("find", "total"): Timer(encode_find, find, trial_seconds),
        ("find", "bson"): Timer(encode, find, trial_seconds),
        ("insert100", "total"): Timer(encode_insert, docs, trial_seconds),
        ("insert100", "bson"): Timer(bson_insert, docs, trial_seconds),
        ("insert100-raw", "total"): Timer(encode_insert, raw_docs, trial_seconds),
        ("insert100-raw", "bson"): Timer(encode, insert_body, trial_seconds),
        ("reply100", "total"): Timer(decode_reply, reply, trial_seconds),
        ("reply100", "bson"): Timer(lambda data: decode(data[21:]), reply, trial_seconds),
        ("reply100-frame", "total"): Timer(frame_reply, reply, trial_seconds),
        ("reply100-frame", "bson"): Timer(lambda _: None, None, trial_seconds),
    }


def pure_worker(trial_seconds: float) -> None:
    """The subprocess side: PyMongo with both C extensions blocked; trials on request."""
    sys.modules["bson._cbson"] = None  # type: ignore[assignment]
    sys.modules["pymongo._cmessage"] = None  # type: ignore[assignment]
    import bson
    import pymongo.message

    assert bson._USE_C is False and pymongo.message._use_c is False, "C is still in use"
    timers = pymongo_timers(trial_seconds)
    print("ready", flush=True)
    for line in sys.stdin:
        case, part = line.split()
        print(repr(timers[case, part].trial()), flush=True)


def main() -> None:
    trial_seconds, trials, is_pure_worker = side_by_side_options(__doc__.split("\n\n")[0])
    if is_pure_worker:
        pure_worker(trial_seconds)
        return

    import pymongo.message

    assert pymongo.message._use_c, "PyMongo's C extension is not available"
    print(f"data: {data_dir()}  trials: {trials} x ~{trial_seconds}s, interleaved  "
          f"python {sys.version.split()[0]}")  # fmt: skip
    pure = PureClient(__file__, trial_seconds)
    c_ext = pymongo_timers(trial_seconds)
    ours = our_timers(trial_seconds)
    for _ in range(trials):
        for key in ours:
            ours[key].trial()
            c_ext[key].trial()
            pure.trial(*key)
    pure.close()

    us = 1e6
    header = (
        f"{'case':<15} {'part':<8} {'ours us':>9} {'C us':>9} {'pure us':>9} "
        f"{'ours/C':>7} {'ours/pure':>9}"
    )
    print(header)
    print("-" * len(header))
    framing: dict[str, tuple[float, float, float]] = {}
    for case in CASES:
        rows = {}
        for part in ("total", "bson"):
            rows[part] = (
                ours[case, part].median(),
                c_ext[case, part].median(),
                pure.median(case, part),
            )
        rows["framing"] = tuple(t - b for t, b in zip(rows["total"], rows["bson"], strict=True))  # type: ignore[assignment]
        framing[case] = rows["framing"]
        for part, (o, c, p) in rows.items():
            if case == "reply100-frame" and part == "bson":
                continue
            print(
                f"{case:<15} {part:<8} {o * us:>9.2f} {c * us:>9.2f} {p * us:>9.2f} "
                f"{o / c if c > 0 else float('nan'):>6.2f}x {o / p if p > 0 else float('nan'):>8.2f}x"
            )
    print()
    print(f"framing overhead per message (total - BSON), target ours <= {TARGET}x PyMongo C:")
    for case, (o, c, _) in framing.items():
        ratio = o / c if c > 0 else float("inf")
        verdict = "met" if ratio <= TARGET else "NOT met"
        print(
            f"  {case:<15} ours {o * us:8.2f} us   C {c * us:8.2f} us   {ratio:6.2f}x  ({verdict})"
        )


if __name__ == "__main__":
    main()
