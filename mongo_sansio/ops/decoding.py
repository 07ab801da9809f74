"""Documents as the caller's codec options want them, and raw batches.

Theory of operation
-------------------
A connection decodes every reply with the default :class:`CodecOptions` (``dict`` documents,
naive UTC datetimes, UUIDs left as :class:`~mongo_sansio.bson.Binary`): it cannot know which
database or collection asked.  A client, database, collection or ``command(...,
codec_options=...)`` that wants other options gets each document it hands out re-read under
them: :func:`apply_codec_options` encodes the document back to BSON and decodes it with the
caller's options.  For documents decoded under the defaults the round trip is exact (every
BSON value decodes to a Python value that encodes to the same bytes), so the result is what
decoding the server's bytes with those options would have given.  Documents under the
default options are returned as they are, at no cost.

:func:`raw_batch` gives a batch as PyMongo's raw-batch cursors do: the concatenated BSON of its
documents.

:func:`codec_options_from_keywords` reads PyMongo's client keywords (``document_class``,
``tz_aware``, ``tzinfo``, ``uuidRepresentation``, ``datetime_conversion``,
``unicode_decode_error_handler``) into a :class:`CodecOptions`, validated as PyMongo does
(TypeError / ValueError naming the option).

Inputs: documents, codec options, keyword options.  Outputs: documents, bytes, CodecOptions.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any, Final

from mongo_sansio.bson import decode, encode
from mongo_sansio.bson.codec_options import (
    DEFAULT_CODEC_OPTIONS,
    CodecOptions,
    DatetimeConversion,
    UuidRepresentation,
)
from mongo_sansio.bson.raw import RawDocument

__all__ = [
    "REPLY_CODEC_OPTIONS",
    "CODEC_KEYWORDS",
    "apply_codec_options",
    "decodes_as_replies",
    "raw_batch",
    "raw_batch_options",
    "reply_values",
    "codec_options_from_keywords",
]

#: the options connections decode replies with
REPLY_CODEC_OPTIONS: Final = DEFAULT_CODEC_OPTIONS

#: PyMongo's URI spelling of each uuidRepresentation value
_UUID_REPRESENTATIONS: Final = {
    "unspecified": UuidRepresentation.UNSPECIFIED,
    "standard": UuidRepresentation.STANDARD,
    "pythonLegacy": UuidRepresentation.PYTHON_LEGACY,
    "javaLegacy": UuidRepresentation.JAVA_LEGACY,
    "csharpLegacy": UuidRepresentation.CSHARP_LEGACY,
}
_UNICODE_DECODE_ERROR_HANDLERS: Final = ("strict", "replace", "ignore")

#: client keywords that are codec options, by their lower-case spelling
CODEC_KEYWORDS: Final = frozenset(
    {
        "document_class",
        "tz_aware",
        "tzinfo",
        "uuidrepresentation",
        "datetime_conversion",
        "unicode_decode_error_handler",
    }
)


#: id(options) -> (options, whether documents decoded under the reply options need no change)
_NO_CHANGE: dict[int, tuple[CodecOptions, bool]] = {}


def decodes_as_replies(codec_options: CodecOptions) -> bool:
    """Whether a plain dict decoded from a reply is already what ``codec_options`` decode
    (then :func:`apply_codec_options` returns it as it is; a cursor asks once)."""
    if codec_options is REPLY_CODEC_OPTIONS:
        return True
    entry = _NO_CHANGE.get(id(codec_options))
    if entry is not None and entry[0] is codec_options:
        return entry[1]
    # max_nesting_depth and max_document_size bound decoding; they do not change values.
    same = (
        codec_options.with_options(
            max_nesting_depth=REPLY_CODEC_OPTIONS.max_nesting_depth,
            max_document_size=REPLY_CODEC_OPTIONS.max_document_size,
        )
        == REPLY_CODEC_OPTIONS
    )
    if len(_NO_CHANGE) >= 64:
        _NO_CHANGE.clear()
    _NO_CHANGE[id(codec_options)] = (codec_options, same)  # holding it keeps its id unique
    return same


def reply_values(document: Any, codec_options: CodecOptions | None) -> Any:
    """A write reply (or a result document built from replies: ``upserted`` ids) with the
    value classes ``codec_options`` decode into: PyMongo's under ``pymongo_types``, converted
    in place (PyMongo decodes write replies with the collection's options), else unchanged."""
    if codec_options is None or not codec_options.pymongo_types:
        return document
    from mongo_sansio.bson._pymongo_types import to_pymongo  # late: only in that mode

    return to_pymongo(document)


def apply_codec_options(document: Any, codec_options: CodecOptions) -> Any:
    """``document`` (decoded by a connection) as ``codec_options`` decode it; anything that
    is not a document is returned unchanged.  A RawDocument (a batch document of an
    operation that asked for them) already read under ``codec_options`` is returned as it
    is; under other options it is decoded anew from its bytes."""
    kind = type(document)
    if kind is dict:  # the common case first (an ABC isinstance check costs more)
        if decodes_as_replies(codec_options):
            return document
        if codec_options.pymongo_types and decodes_as_replies(_ours(codec_options)):
            # the reply's own classes but PyMongo's: converted in place (the dict is fresh
            # from the reply), not encoded and decoded again
            from mongo_sansio.bson._pymongo_types import to_pymongo  # late: only then

            return to_pymongo(document)
    elif kind is RawDocument:
        if document.codec_options is codec_options:
            return document
        return decode(document.raw, codec_options)
    if not isinstance(document, Mapping) or decodes_as_replies(codec_options):
        return document
    data = document.raw if isinstance(document, RawDocument) else encode(document)
    return decode(data, codec_options)


#: id(options with pymongo_types) -> (them, the same options without)
_OURS: dict[int, tuple[CodecOptions, CodecOptions]] = {}


def _ours(codec_options: CodecOptions) -> CodecOptions:
    entry = _OURS.get(id(codec_options))
    if entry is not None and entry[0] is codec_options:
        return entry[1]
    ours = codec_options.with_options(pymongo_types=False)
    if len(_OURS) >= 64:
        _OURS.clear()
    _OURS[id(codec_options)] = (codec_options, ours)  # holding them keeps their id unique
    return ours

_RAW_BATCH_OPTIONS: dict[int, tuple[CodecOptions | None, CodecOptions]] = {}


def raw_batch_options(codec_options: CodecOptions | None) -> CodecOptions:
    """``codec_options`` (None: the defaults) with RawDocument as the document class: the
    options of a raw-batch cursor's commands, whose replies then keep their batches as views
    (made once per options object)."""
    entry = _RAW_BATCH_OPTIONS.get(id(codec_options))
    if entry is not None and entry[0] is codec_options:
        return entry[1]
    base = DEFAULT_CODEC_OPTIONS if codec_options is None else codec_options
    raw = (
        base
        if base.document_class is RawDocument
        # (views over the reply's bytes: pymongo_types, which converts decoded dicts, has
        # nothing to do there)
        else base.with_options(document_class=RawDocument, pymongo_types=False)
    )
    if len(_RAW_BATCH_OPTIONS) >= 64:
        _RAW_BATCH_OPTIONS.clear()
    _RAW_BATCH_OPTIONS[id(codec_options)] = (codec_options, raw)
    return raw


def raw_batch(documents: Iterable[Any]) -> bytes:
    """The BSON of ``documents``, concatenated (one raw batch); RawDocument views are copied
    out of their reply as they are."""
    return b"".join(
        document.raw if isinstance(document, RawDocument) else encode(document)
        for document in documents
    )


def _boolean(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(f"The value of {name} must be 'true' or 'false'")


def _uuid_representation(value: Any) -> UuidRepresentation:
    if isinstance(value, str) and value in _UUID_REPRESENTATIONS:
        return _UUID_REPRESENTATIONS[value]
    raise ValueError(
        f"{value} is an invalid UUID representation. Must be one of {tuple(_UUID_REPRESENTATIONS)}"
    )


def _datetime_conversion(value: Any) -> DatetimeConversion:
    if value is None:
        return DatetimeConversion.DATETIME
    if isinstance(value, str):
        if value.isdigit():
            return DatetimeConversion(int(value))
        try:
            return DatetimeConversion[value]
        except KeyError:
            raise ValueError(f"datetime_conversion: unknown conversion {value!r}") from None
    if isinstance(value, int) and not isinstance(value, bool):
        return DatetimeConversion(value)
    raise TypeError(
        "datetime_conversion must be a str or int representing DatetimeConversion, not "
        f"{type(value)}"
    )


def codec_options_from_keywords(
    options: Mapping[str, Any], *, base: CodecOptions = DEFAULT_CODEC_OPTIONS
) -> CodecOptions:
    """``base`` with the codec keywords among ``options`` applied (other keys are ignored;
    names are matched case-insensitively, as PyMongo matches client options)."""
    changes: dict[str, Any] = {}
    for key, value in options.items():
        name = key.lower()
        if name not in CODEC_KEYWORDS or value is None:
            continue
        if name == "document_class":
            changes["document_class"] = value
        elif name == "tz_aware":
            changes["tz_aware"] = _boolean(key, value)
        elif name == "tzinfo":
            if not isinstance(value, datetime.tzinfo):
                raise TypeError(f"{value} must be an instance of datetime.tzinfo")
            changes["tzinfo"] = value
        elif name == "uuidrepresentation":
            changes["uuid_representation"] = _uuid_representation(value)
        elif name == "datetime_conversion":
            changes["datetime_conversion"] = _datetime_conversion(value)
        else:
            if value not in _UNICODE_DECODE_ERROR_HANDLERS:
                raise ValueError(
                    "Invalid Unicode decode error handler. Must be one of "
                    f"{_UNICODE_DECODE_ERROR_HANDLERS}"
                )
            changes["unicode_decode_error_handler"] = value
    if not changes:
        return base
    try:
        result = base.with_options(**changes)
    except TypeError as error:
        raise TypeError(
            "document_class must be dict, bson.son.SON, bson.raw_bson.RawBSONDocument, or a "
            f"subclass of collections.MutableMapping ({error})"
        ) from None
    if result.tzinfo is not None and not result.tz_aware:
        raise ValueError("cannot specify tzinfo without also setting tz_aware=True")
    return result
