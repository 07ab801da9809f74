"""CodecOptions: how BSON values map to Python values, and the decoder's safety limits."""

from __future__ import annotations

import datetime
import enum
from collections.abc import Mapping, MutableMapping
from typing import Any

import attrs

__all__ = [
    "CodecOptions",
    "DatetimeConversion",
    "UuidRepresentation",
    "DEFAULT_CODEC_OPTIONS",
    "DEFAULT_MAX_NESTING_DEPTH",
]

DEFAULT_MAX_NESTING_DEPTH = 200


class UuidRepresentation(enum.IntEnum):
    """How ``uuid.UUID`` values are stored (the UUID specification's names).

    ``UNSPECIFIED`` (the default) decodes both UUID subtypes as :class:`Binary` and refuses to
    encode a ``uuid.UUID`` without an explicit representation, as the specification asks.
    """

    UNSPECIFIED = 0
    STANDARD = 4
    PYTHON_LEGACY = 3
    JAVA_LEGACY = 5
    CSHARP_LEGACY = 6


class DatetimeConversion(enum.IntEnum):
    """How BSON UTC datetimes decode.

    ``DATETIME`` and ``DATETIME_AUTO`` give ``datetime.datetime`` where Python can represent
    the value and :class:`DatetimeMS` otherwise (decoding never fails on range);
    ``DATETIME_CLAMP`` clamps to ``datetime.min``/``datetime.max``; ``DATETIME_MS`` always
    gives :class:`DatetimeMS`.
    """

    DATETIME = 1
    DATETIME_CLAMP = 2
    DATETIME_MS = 3
    DATETIME_AUTO = 4


def _check_document_class(_inst: Any, _attr: Any, value: Any) -> None:
    if not (isinstance(value, type) and issubclass(value, MutableMapping)):
        from mongo_sansio.bson.raw import RawDocument  # late: raw imports this module

        if not (isinstance(value, type) and issubclass(value, (RawDocument, Mapping))):
            raise TypeError("document_class must be a mapping type (dict, RawDocument, ...)")


def _check_tzinfo(_inst: Any, _attr: Any, value: Any) -> None:
    if value is not None and not isinstance(value, datetime.tzinfo):
        raise TypeError("tzinfo must be a datetime.tzinfo or None")


def _check_pymongo_types(inst: Any, _attr: Any, value: Any) -> None:
    if not value:
        return
    from mongo_sansio.bson._pymongo_types import require_pymongo_bson  # late: it imports raw
    from mongo_sansio.errors import ConfigurationError

    require_pymongo_bson()
    if not issubclass(inst.document_class, MutableMapping):
        raise ConfigurationError(
            "CodecOptions(pymongo_types=True) needs a mutable document_class (dict, SON...), "
            f"not {inst.document_class.__qualname__}"
        )


def _check_positive(_inst: Any, attr: Any, value: Any) -> None:
    if value is not None and (not isinstance(value, int) or value < 1):
        raise ValueError(f"{attr.name} must be a positive integer")


@attrs.frozen(kw_only=True)
class CodecOptions:
    """Decoding and encoding preferences.  Immutable; use :meth:`with_options` to vary one."""

    document_class: type = attrs.field(default=dict, validator=_check_document_class)
    tz_aware: bool = False
    tzinfo: datetime.tzinfo | None = attrs.field(default=None, validator=_check_tzinfo)
    uuid_representation: UuidRepresentation = attrs.field(
        default=UuidRepresentation.UNSPECIFIED, converter=UuidRepresentation
    )
    datetime_conversion: DatetimeConversion = attrs.field(
        default=DatetimeConversion.DATETIME, converter=DatetimeConversion
    )
    unicode_decode_error_handler: str = "strict"
    #: documents nested deeper than this are refused (decoding and encoding)
    max_nesting_depth: int = attrs.field(default=DEFAULT_MAX_NESTING_DEPTH, validator=_check_positive)
    #: documents larger than this many bytes are refused; None means the format's own limit
    max_document_size: int | None = attrs.field(default=None, validator=_check_positive)
    #: decode into PyMongo's ``bson`` classes (``bson.ObjectId``, ``bson.Int64`` for every
    #: int64, ``bson.Regex``...), as ``bson.decode`` does, for code moved over from PyMongo;
    #: needs PyMongo installed (ConfigurationError otherwise) and a mutable document_class
    pymongo_types: bool = attrs.field(default=False, validator=_check_pymongo_types)

    def with_options(self, **changes: Any) -> CodecOptions:
        return attrs.evolve(self, **changes)


DEFAULT_CODEC_OPTIONS = CodecOptions()
