"""atheris target for the BSON decoder (and RawDocument).

Invariant: for any bytes, ``decode`` returns a document or raises InvalidBSON, nothing else;
what it returns encodes, and decoding that encoding gives the same bytes back again (a fixed
point after one round).  RawDocument over the same bytes agrees with ``decode`` or raises
InvalidBSON.

Run a campaign:  python fuzz/bson_decode.py CORPUS_DIR -max_total_time=3600  (docs/fuzzing.md)
"""

from __future__ import annotations

from mongo_sansio.bson import RawDocument, decode, decode_all, encode
from mongo_sansio.bson.errors import InvalidBSON


def check_one(data: bytes) -> None:
    try:
        value = decode(data)
    except InvalidBSON:
        value = None
    if value is not None:
        once = encode(value)
        assert encode(decode(once)) == once, "decode(encode(x)) changed the document"

    try:
        raw = RawDocument(data)
        full = raw.to_dict()
    except InvalidBSON:
        full = None
    if value is None:
        assert full is None, "RawDocument accepted bytes that decode refused"
    else:
        assert full is not None and encode(full) == encode(value), "RawDocument disagrees"

    try:
        decode_all(data)
    except InvalidBSON:
        pass


if __name__ == "__main__":
    from _runner import fuzz  # fuzz/ is sys.path[0] when a target runs as a script

    fuzz(check_one)
