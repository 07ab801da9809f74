"""BSON and Extended JSON: a complete, pure codec.

``encode(document) -> bytes`` and ``decode(data) -> dict`` convert between Python documents and
BSON; ``decode_all``/``decode_iter`` read concatenated documents; :class:`RawDocument` is a lazy,
zero-copy view over one document's bytes; :mod:`mongo_sansio.bson.extjson` reads and writes
Extended JSON v2 (relaxed and canonical) and the legacy forms.  Bytes that cannot be decoded raise
:class:`InvalidBSON` (the peer's fault); values that cannot be encoded raise
:class:`InvalidDocument` or :class:`UnencodableType`, naming the key path (the caller's fault).
"""

from __future__ import annotations

from mongo_sansio.bson import extjson  # imports the submodules it needs directly
from mongo_sansio.bson._decode import decode, decode_all, decode_iter
from mongo_sansio.bson._encode import encode, encode_into
from mongo_sansio.bson.codec_options import (
    DEFAULT_CODEC_OPTIONS,
    CodecOptions,
    DatetimeConversion,
    UuidRepresentation,
)
from mongo_sansio.bson.decimal128 import Decimal128
from mongo_sansio.bson.errors import (
    BSONError,
    InvalidBSON,
    InvalidDecimal128,
    InvalidDocument,
    InvalidExtendedJSON,
    InvalidId,
    UnencodableType,
)
from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.bson.raw import RawArray, RawDocument
from mongo_sansio.bson.types import (
    Binary,
    Code,
    DatetimeMS,
    DBPointer,
    DBRef,
    Int64,
    MaxKey,
    MinKey,
    Regex,
    Symbol,
    Timestamp,
    Undefined,
)
from mongo_sansio.bson.vector import BinaryVector, BinaryVectorDtype

__all__ = [
    "encode",
    "encode_into",
    "decode",
    "decode_all",
    "decode_iter",
    "extjson",
    "CodecOptions",
    "DEFAULT_CODEC_OPTIONS",
    "DatetimeConversion",
    "UuidRepresentation",
    "RawDocument",
    "RawArray",
    "ObjectId",
    "Int64",
    "Decimal128",
    "Timestamp",
    "Binary",
    "BinaryVector",
    "BinaryVectorDtype",
    "Regex",
    "Code",
    "MinKey",
    "MaxKey",
    "DBRef",
    "DBPointer",
    "Symbol",
    "Undefined",
    "DatetimeMS",
    "BSONError",
    "InvalidBSON",
    "InvalidDocument",
    "UnencodableType",
    "InvalidDecimal128",
    "InvalidExtendedJSON",
    "InvalidId",
]
