"""atheris target for the Extended JSON reader (and, through what it returns, the writer).

Invariant: for any bytes, ``extjson.loads`` returns a value or raises InvalidExtendedJSON,
nothing else.  What it returns can be written in both modes; a document it returns encodes
to BSON; and canonical Extended JSON is a fixed point: reading back what was written gives a
value with the same BSON, and writing that again gives the same text.

Run a campaign:  python fuzz/extjson_loads.py CORPUS_DIR -max_total_time=3600  (docs/fuzzing.md)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson import encode, extjson
from mongo_sansio.bson.errors import InvalidExtendedJSON


def _bson(value: Any) -> bytes:
    return encode(value if isinstance(value, Mapping) else {"v": value})


def check_one(data: bytes) -> None:
    try:
        value = extjson.loads(data)
    except InvalidExtendedJSON:
        return

    once = _bson(value)  # anything loads returns can be encoded (wrapped, if not a document)
    canonical = extjson.dumps(value, mode="canonical")
    back = extjson.loads(canonical)
    # The one loss the spec allows: a Decimal128 NaN's sign and payload have no text form
    # (the corpus marks "-NaN" lossy), so such values compare by text only.
    if '"$numberDecimal": "NaN"' not in canonical:
        assert _bson(back) == once, "canonical Extended JSON changed the value"
    assert extjson.dumps(back, mode="canonical") == canonical, "canonical text is not stable"

    relaxed = extjson.dumps(value, mode="relaxed")
    again = extjson.loads(relaxed)  # relaxed may lose number types, but must read back
    assert extjson.dumps(again, mode="relaxed") == relaxed, "relaxed text is not stable"


if __name__ == "__main__":
    from _runner import fuzz  # fuzz/ is sys.path[0] when a target runs as a script

    fuzz(check_one)
