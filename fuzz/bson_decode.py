"""atheris target for the BSON decoder (and RawDocument).

Invariant: for any bytes, ``decode`` returns a document or raises InvalidBSON, nothing else;
what it returns encodes, and decoding that encoding gives the same bytes back again (a fixed
point after one round).  RawDocument over the same bytes agrees with ``decode`` or raises
InvalidBSON.

Run a campaign:  python fuzz/bson_decode.py CORPUS_DIR -max_total_time=3600  (docs/fuzzing.md)
"""

from __future__ import annotations

import sys

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


def main() -> None:
    import atheris  # only for campaigns; CI runs check_one under hypothesis

    atheris.instrument_all()
    atheris.Setup(sys.argv, check_one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
