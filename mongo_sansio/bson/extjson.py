"""MongoDB Extended JSON v2: Python values to JSON text and back.

Inputs and outputs:

- :func:`dumps` takes a document (or any value the BSON encoder accepts) and a mode,
  ``"relaxed"`` (the default, readable: numbers as JSON numbers, recent dates as ISO-8601) or
  ``"canonical"`` (type-preserving: every number in a type wrapper), and returns JSON text.
  ``codec_options`` gives the ``uuid_representation`` for ``uuid.UUID`` values (STANDARD when
  unspecified) and ``max_nesting_depth``; ``indent`` and ``sort_keys`` shape the text
  (``sort_keys`` sorts document keys, never the keys of type wrappers).
- :func:`loads` takes Extended JSON text (``str`` or UTF-8 ``bytes``) in canonical, relaxed or
  the legacy forms (``{"$binary": "...", "$type": "..."}``, ``{"$regex": "...", "$options":
  "..."}``, ``{"$uuid": "..."}``) and returns the value, typed as
  :func:`mongo_sansio.bson.decode` would type the same BSON under ``codec_options``.
- :func:`to_extjson_value` and :func:`from_extjson_value` do the same without the text step:
  JSON-ready Python values out, parsed JSON in.

Errors: text that is not valid Extended JSON raises :class:`InvalidExtendedJSON` (a
``ValueError``), whatever is wrong with it.  Values that cannot be written raise
:class:`InvalidDocument` or :class:`UnencodableType` naming the key path, as the encoder does.
An unknown mode raises ``ValueError``.  Neither direction recurses on the input's nesting.

The writer lives in :mod:`._extjson_dump`, the reader in :mod:`._extjson_load`.
"""

from __future__ import annotations

import json
from typing import Any

from mongo_sansio.bson._extjson_dump import to_extjson_value
from mongo_sansio.bson._extjson_load import from_extjson_value, loads
from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.bson.errors import InvalidDocument

__all__ = ["dumps", "loads", "to_extjson_value", "from_extjson_value", "RELAXED", "CANONICAL"]

RELAXED = "relaxed"
CANONICAL = "canonical"


def dumps(
    obj: Any,
    mode: str = RELAXED,
    *,
    codec_options: CodecOptions | None = None,
    indent: int | str | None = None,
    sort_keys: bool = False,
) -> str:
    """``obj`` as Extended JSON text in ``mode`` ("relaxed" or "canonical")."""
    value = to_extjson_value(obj, mode, codec_options=codec_options, sort_keys=sort_keys)
    try:
        text = json.dumps(
            value, ensure_ascii=False, allow_nan=False, check_circular=False, indent=indent
        )
    except RecursionError:  # only when max_nesting_depth is set beyond the Python stack
        raise InvalidDocument("document nested too deeply to write as JSON") from None
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidDocument("a string or key contains a lone surrogate") from None
    return text
