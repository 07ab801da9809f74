"""Instruction counts of framing an insert of 100 documents (ours vs PyMongo's C path).

Wall-clock framing rows of ``wire_bench.py`` for ``insert100`` are the difference of two
~400 us medians and come out as noise; instruction counts under callgrind are repeatable.
Run each variant with N=0 and N=200 and take (count(200) - count(0)) / 200::

    for v in ours ours_bson theirs theirs_bson; do for n in 0 200; do
      PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        .venv/bin/python benchmarks/insert_instructions.py $v $n 2>&1 | grep Collected
    done; done

Framing = ours - ours_bson (the same documents encoded in one call) against
theirs - theirs_bson.  Measured 2026-11-23: ours 3,802k - 3,783k = ~19k instructions per
message; PyMongo C 1,277k - 1,231k = ~46k (0.41x).
"""

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bson  # noqa: E402
from bson.codec_options import CodecOptions  # noqa: E402
from bson_bench import to_ours  # noqa: E402
from pymongo import message  # noqa: E402
from wire_bench import pymongo_inputs  # noqa: E402

from mongo_sansio.bson import encode  # noqa: E402
from mongo_sansio.wire import encode_op_msg  # noqa: E402


def main() -> None:
    inputs = pymongo_inputs()
    pdocs = inputs["docs"]
    odocs = [to_ours(d) for d in pdocs]
    body = {"insert": "coll", "ordered": True, "$db": "test"}
    opts: Any = CodecOptions()
    which, n = sys.argv[1], int(sys.argv[2])
    for _ in range(n):
        if which == "ours":
            encode_op_msg(body, request_id=1, sequences={"documents": odocs})
        elif which == "ours_bson":
            encode({"documents": odocs})
        elif which == "theirs":
            message._op_msg(0, dict(body, documents=pdocs), "test", None, opts)
        else:
            bson.encode({"documents": pdocs})


if __name__ == "__main__":
    main()
