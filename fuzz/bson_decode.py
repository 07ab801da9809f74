"""atheris target for the BSON decoder (and RawDocument).

Invariant: for any bytes, ``decode`` returns a document or raises InvalidBSON, nothing else;
what it returns encodes, and decoding that encoding gives the same bytes back again (a fixed
point after one round).  RawDocument over the same bytes agrees with ``decode`` or raises
InvalidBSON.  The shape-compiled paths agree with the general ones: ``decode`` (a shape
decoder once the shape recurs) with ``decode`` given options equal to the default,
``encode`` (a shape encoder once the document's shape recurs) with ``encode`` given explicit
codec options, and key lookups in a RawDocument (a shape walker's once the shape recurs) with lookups in a view
that walks element by element; decoders and walkers are run until they use a learned layout.

Run a campaign:  python fuzz/bson_decode.py CORPUS_DIR -max_total_time=3600  (docs/fuzzing.md)
"""

from __future__ import annotations

from typing import Any

from mongo_sansio.bson import RawArray, RawDocument, decode, decode_all, encode
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.bson.errors import InvalidBSON

# equal to the default options but not the same object: decoding never uses shape decoders
GENERAL = CodecOptions()


def _as_bytes(value: Any) -> bytes:
    """A value read through a view, as BSON bytes (so a NaN equals its copy)."""
    if isinstance(value, RawDocument):
        value = value.to_dict()
    elif isinstance(value, RawArray):
        value = value.to_list()
    return encode({"v": value}, DEFAULT_CODEC_OPTIONS)


def check_one(data: bytes) -> None:
    try:
        # the second decode compiles shape decoders, the third uses them (and they learn the
        # layout), the fourth decodes by the layout
        for _ in range(4):
            value = decode(data)
    except InvalidBSON:
        value = None
    try:
        general = decode(data, GENERAL)
    except InvalidBSON:
        general = None
    assert (value is None) == (general is None), "a shape decoder and the general one disagree"
    if value is not None:
        assert encode(value) == encode(general), "a shape decoder's value differs"
        once = encode(value)
        assert encode(decode(once)) == once, "decode(encode(x)) changed the document"
        assert encode(value) == encode(value, DEFAULT_CODEC_OPTIONS), "a shape encoder differs"
        careful = RawDocument._view(data, 0, len(data), DEFAULT_CODEC_OPTIONS, None)
        for _ in range(2):  # (a walker's first document teaches it the layout the next takes)
            fresh = RawDocument(data)
            for key in value:
                assert _as_bytes(fresh[key]) == _as_bytes(careful[key]), "a shape walker differs"

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
