"""Which classes values read back are: ours, or PyMongo's ``bson`` classes (the clients'
``pymongo_types`` keyword).

Code moved over from PyMongo works with ``bson.ObjectId``, ``bson.Int64``..., and compares,
``isinstance``-checks and ``json_util.dumps`` what it reads.  So a client decodes into PyMongo's
classes (``CodecOptions(pymongo_types=True)``) when:

- ``pymongo_types=True`` (ConfigurationError when PyMongo is not installed);
- ``pymongo_types=None`` (the default) and PyMongo's ``bson`` package is already imported when
  the client is made: the user's code works with PyMongo's classes.  Nothing is imported to
  find out, so a program that never imports PyMongo keeps our classes and our speed;
- the document class is PyMongo's (``document_class=SON``), unless ``pymongo_types=False``.

``pymongo_types=False`` never does.  A document class that is not a mutable mapping (ours or
PyMongo's raw documents) keeps its own values.  Databases and collections inherit the client's
codec options; codec options given explicitly (ours) keep their own ``pymongo_types``.  The
``_id`` generated for a document inserted without one is PyMongo's ``bson.ObjectId`` under
options that decode into PyMongo's classes, as PyMongo generates it.  Commands whose replies
PyMongo decodes with its default options (``db.command``, ``list_collections``,
``list_databases``) decode with :func:`plain_codec_options` of the client.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, MutableMapping
from typing import Any

from mongo_sansio.bson import ObjectId
from mongo_sansio.bson._pymongo_types import (
    pymongo_bson_loaded,
    pymongo_object_id,
    require_pymongo_bson,
    to_pymongo,
)
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.ops.decoding import apply_codec_options

__all__ = [
    "client_codec_options",
    "handed_out",
    "id_factory_for",
    "plain_codec_options",
    "pymongo_index_information",
    "son_codec_options",
]

def client_codec_options(
    codec_options: CodecOptions, pymongo_types: bool | None
) -> tuple[CodecOptions, bool]:
    """A client's codec options (built from its keywords) under its ``pymongo_types``, and
    whether the client's values are PyMongo's (for :func:`plain_codec_options`)."""
    if pymongo_types is None:
        wanted = codec_options.pymongo_types or pymongo_bson_loaded()
    elif isinstance(pymongo_types, bool):
        if pymongo_types:
            require_pymongo_bson()
        wanted = pymongo_types
    else:
        raise TypeError(f"pymongo_types must be True, False or None, not {pymongo_types!r}")
    if wanted == codec_options.pymongo_types or (
        wanted and not issubclass(codec_options.document_class, MutableMapping)
    ):  # (raw documents: their values stay as their class reads them)
        return codec_options, wanted
    return codec_options.with_options(pymongo_types=wanted), wanted


def plain_codec_options(pymongo_types: bool) -> CodecOptions:
    """PyMongo's ``DEFAULT_CODEC_OPTIONS`` for a client whose values are (or are not)
    PyMongo's."""
    return _pymongo_defaults() if pymongo_types else DEFAULT_CODEC_OPTIONS


def son_codec_options(pymongo_types: bool) -> CodecOptions:
    """PyMongo's ``CodecOptions(SON)`` (its list_indexes options) for such a client: PyMongo's
    SON documents; plain dicts (which keep their order as well) for ours."""
    return _pymongo_son() if pymongo_types else DEFAULT_CODEC_OPTIONS


@functools.cache
def _pymongo_defaults() -> CodecOptions:
    return DEFAULT_CODEC_OPTIONS.with_options(pymongo_types=True)


@functools.cache
def _pymongo_son() -> CodecOptions:
    import bson.son  # PyMongo's: pymongo_types=True has checked it is there

    return _pymongo_defaults().with_options(document_class=bson.son.SON)


def pymongo_index_information(information: dict[str, Any]) -> dict[str, Any]:
    """Our ``index_information`` as PyMongo's gives it to a client whose values are PyMongo's:
    each index a dict whose documents (``partialFilterExpression``, ``weights``...) are SON,
    as PyMongo reads indexes with ``CodecOptions(SON)``."""
    options = son_codec_options(True)
    converted: dict[str, Any] = {}
    for name, entry in information.items():
        document = apply_codec_options(entry, options)
        document["key"] = entry["key"]  # the (field, direction) pairs, in place
        converted[name] = dict(document)
    return converted


def handed_out(client: Any, value: Any) -> Any:
    """``value``, which the core holds (a session's ``lsid``, cluster and operation times), as
    ``client`` hands values out: a copy with PyMongo's classes when its values are PyMongo's
    (PyMongo's session gives ``bson.Binary``, ``bson.Timestamp``), else itself."""
    if value is None or not client.pymongo_types:
        return value
    return to_pymongo(copy.deepcopy(value))


def id_factory_for(codec_options: CodecOptions) -> Callable[[], Any]:
    """What makes the ``_id`` of a document inserted without one under ``codec_options``."""
    return pymongo_object_id() if codec_options.pymongo_types else ObjectId
