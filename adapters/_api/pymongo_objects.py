"""PyMongo's own objects, taken wherever PyMongo's API takes them: the one place that knows them.

Code moved over from PyMongo by changing only its client import keeps building PyMongo's
objects (``from pymongo import InsertOne, WriteConcern``, ``from bson.codec_options import
CodecOptions``, ``from pymongo.read_preferences import SecondaryPreferred``...) and hands them
to our client.  The client API's entry points (settings of a database or collection, write
models, index models, collations, transaction options, cursor types, the client's codec
keywords) pass such arguments through :func:`adopt` (or one of the helpers built on it), which
gives back ours meaning the same; everything else is returned as it is, and the core then
checks it as usual.  The core never sees a PyMongo object, and PyMongo is never imported here:
an object is PyMongo's when a class of its MRO is defined in a ``pymongo.*`` or ``bson.*``
module (it can only exist if the user's code imported PyMongo), and it is read through
PyMongo's public attributes only (``document``, ``level``, ``mongos_mode``, ``tag_sets``...),
except the write models, whose fields PyMongo keeps private (``_filter``, ``_doc``...): what is
read there is pinned by tests/unit/test_pymongo_objects.py against the installed PyMongo.

=========================================== ===================================================
PyMongo's object                            ours
=========================================== ===================================================
``WriteConcern``                            WriteConcern of its ``document`` (``fsync`` as j)
``ReadConcern``                             ReadConcern(its ``level``)
``ReadPreference.X``, ``Secondary(...)``... ReadPreference(mode, tag_sets, max_staleness, hedge)
``CodecOptions``                            CodecOptions, every field, ``pymongo_types=True``
``InsertOne`` ... ``DeleteMany``            our write model with the same fields
``IndexModel``, ``SearchIndexModel``        ours / its ``document``
``Collation``                               its ``document``
``TransactionOptions``                      ours, each concern adopted
=========================================== ===================================================

A ``CodecOptions`` with ``document_class=RawBSONDocument`` gives documents of PyMongo's
``bson.raw_bson.RawBSONDocument`` class (read by PyMongo under the given options), and a
``type_registry`` with codecs or a fallback encoder is refused (:class:`ConfigurationError`):
our codec has no custom types.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any, Final

from mongo_sansio.bson import encode
from mongo_sansio.bson.codec_options import CodecOptions, DatetimeConversion, UuidRepresentation
from mongo_sansio.errors import ConfigurationError
from mongo_sansio.ops.crud_commands import CursorType
from mongo_sansio.ops.indexes import IndexModel
from mongo_sansio.ops.models import (
    DeleteMany,
    DeleteOne,
    InsertOne,
    ReplaceOne,
    UpdateMany,
    UpdateOne,
    WriteModel,
)
from mongo_sansio.ops.write_concern import ReadConcern, WriteConcern
from mongo_sansio.selection.read_preference import ReadPreference
from mongo_sansio.sessions.transaction import TransactionOptions

__all__ = [
    "adopt",
    "adopt_codec_keywords",
    "adopt_codec_options",
    "adopt_cursor_type",
    "adopt_index_models",
    "adopt_keywords",
    "adopt_settings",
    "adopt_type_registry",
    "adopt_write_models",
    "is_pymongo",
    "pymongo_base_names",
    "pymongo_listener_families",
]

_PACKAGES: Final = ("pymongo", "bson")


def pymongo_base_names(cls: type) -> frozenset[str]:
    """The names of the classes of ``cls``'s MRO that PyMongo (``pymongo.*`` / ``bson.*``)
    defines: empty for anything else."""
    names = _BASES.get(cls)
    if names is None:
        names = frozenset(
            base.__name__
            for base in cls.__mro__
            if getattr(base, "__module__", "").partition(".")[0] in _PACKAGES
        )
        _BASES[cls] = names
    return names


_BASES: dict[type, frozenset[str]] = {}


def is_pymongo(value: object) -> bool:
    """Whether ``value`` is an instance of a class of PyMongo's (or of a subclass of one)."""
    return bool(pymongo_base_names(type(value)))


# -- the conversions, one per PyMongo class ---------------------------------------------------


def _write_concern(value: Any) -> WriteConcern:
    document = value.document
    return WriteConcern(
        w=document.get("w"),
        wtimeout=document.get("wtimeout"),
        j=document.get("j"),
        fsync=document.get("fsync"),
    )


def _read_concern(value: Any) -> ReadConcern:
    return ReadConcern(value.level)


def _read_preference(value: Any) -> ReadPreference:
    # mongos_mode is the server's spelling ("secondaryPreferred"); max_staleness -1 is "none"
    return ReadPreference(
        mode=value.mongos_mode,
        tag_sets=value.tag_sets,
        max_staleness_seconds=value.max_staleness,
        hedge=value.hedge or None,
    )


def _collation(value: Any) -> Mapping[str, Any]:
    document: Mapping[str, Any] = value.document
    return document


def _index_model(value: Any) -> IndexModel:
    document = dict(value.document)
    keys = list(document.pop("key").items())
    return IndexModel(keys, **document)


def _search_index_model(value: Any) -> Mapping[str, Any]:
    document: Mapping[str, Any] = value.document
    return document


def _private(value: Any, name: str) -> Any:
    """A write model's field (PyMongo keeps them private; pinned by a unit test); a field an
    older PyMongo lacks (``sort`` before 4.11, ``namespace`` before 4.9) is None."""
    return getattr(value, name, None)


def _common(value: Any, *names: str) -> dict[str, Any]:
    return {name: _private(value, f"_{name}") for name in names}


def _insert_one(value: Any) -> InsertOne:
    return InsertOne(value._doc, namespace=_private(value, "_namespace"))


def _update(model: type[UpdateOne] | type[UpdateMany], *extra: str) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        fields = _common(value, "upsert", "collation", "array_filters", "hint", "namespace", *extra)
        fields = {key: field for key, field in fields.items() if field is not None}
        return model(value._filter, value._doc, **fields)

    return convert


def _replace_one(value: Any) -> ReplaceOne:
    fields = _common(value, "upsert", "collation", "hint", "namespace", "sort")
    fields = {key: field for key, field in fields.items() if field is not None}
    return ReplaceOne(value._filter, value._doc, **fields)


def _delete(model: type[DeleteOne] | type[DeleteMany]) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        fields = _common(value, "collation", "hint", "namespace")
        fields = {key: field for key, field in fields.items() if field is not None}
        return model(value._filter, **fields)

    return convert


def _transaction_options(value: Any) -> TransactionOptions:
    return TransactionOptions(
        read_concern=adopt(value.read_concern),
        write_concern=adopt(value.write_concern),
        read_preference=adopt(value.read_preference),
        max_commit_time_ms=value.max_commit_time_ms,
    )


def _type_registry_is_empty(registry: Any) -> bool:
    return registry is None or (not registry.codecs and registry.fallback_encoder is None)


def _codec_options(value: Any) -> CodecOptions:
    if not _type_registry_is_empty(value.type_registry):
        raise ConfigurationError(
            "type_registry: custom type codecs (TypeCodec, TypeEncoder, TypeDecoder, "
            "fallback_encoder) are not supported by mongo_sansio's codec"
        )
    document_class = value.document_class
    raw = "RawBSONDocument" in pymongo_base_names(document_class)
    return CodecOptions(
        document_class=_raw_documents(value) if raw else document_class,
        tz_aware=value.tz_aware,
        tzinfo=value.tzinfo,
        uuid_representation=UuidRepresentation(int(value.uuid_representation)),
        datetime_conversion=DatetimeConversion(int(value.datetime_conversion)),
        unicode_decode_error_handler=value.unicode_decode_error_handler,
        # the values inside PyMongo's raw documents are PyMongo's already (it decodes them)
        pymongo_types=not raw,
    )


class _RawBSONDocuments(Mapping[str, Any]):
    """A document class that makes PyMongo's ``RawBSONDocument``: our decoder builds an
    immutable mapping class from the decoded ``dict`` (``cls(document)``), so this class's
    ``__new__`` encodes that dict again (nested documents are PyMongo's raw documents by then,
    copied as they are) and wraps the bytes, read by PyMongo under ``_codec_options``.  Never
    instantiated itself; one subclass per PyMongo ``CodecOptions``."""

    _codec_options: Any = None
    _raw_class: Any = None

    def __new__(cls, document: Mapping[str, Any]) -> Any:
        return cls._raw_class(encode(document), codec_options=cls._codec_options)


#: id(PyMongo CodecOptions) -> (them, the document class made for them)
_RAW_CLASSES: dict[int, tuple[Any, type]] = {}


def _raw_documents(options: Any) -> type:
    entry = _RAW_CLASSES.get(id(options))
    if entry is not None and entry[0] is options:
        return entry[1]
    made = type(
        options.document_class.__name__,
        (_RawBSONDocuments,),
        {"_codec_options": options, "_raw_class": options.document_class},
    )
    if len(_RAW_CLASSES) >= 64:
        _RAW_CLASSES.clear()
    _RAW_CLASSES[id(options)] = (options, made)  # holding them keeps their id unique
    return made


#: PyMongo's class name -> its conversion to ours (read preferences by their base class)
_CONVERSIONS: Final[Mapping[str, Callable[[Any], Any]]] = {
    "WriteConcern": _write_concern,
    "ReadConcern": _read_concern,
    "_ServerMode": _read_preference,
    "Collation": _collation,
    "IndexModel": _index_model,
    "SearchIndexModel": _search_index_model,
    "InsertOne": _insert_one,
    "UpdateOne": _update(UpdateOne, "sort"),
    "UpdateMany": _update(UpdateMany),
    "ReplaceOne": _replace_one,
    "DeleteOne": _delete(DeleteOne),
    "DeleteMany": _delete(DeleteMany),
    "TransactionOptions": _transaction_options,
    "CodecOptions": _codec_options,
}

_NOT_PYMONGO: Final = frozenset({type(None), dict, str, int, bool, float, list, tuple})


def adopt(value: Any) -> Any:
    """Ours for a PyMongo object of a class in the table above; anything else unchanged."""
    kind = type(value)
    if kind in _NOT_PYMONGO:
        return value
    names = pymongo_base_names(kind)
    if not names:
        return value
    for name, convert in _CONVERSIONS.items():
        if name in names:
            return convert(value)
    return value


def adopt_settings(**settings: Any) -> dict[str, Any]:
    """The settings given (``codec_options``, ``read_preference``, ``write_concern``,
    ``read_concern``: None for not given) with PyMongo's objects made ours."""
    return {key: adopt(value) for key, value in settings.items()}


def adopt_codec_options(value: Any) -> Any:
    """A ``codec_options`` argument: PyMongo's made ours, anything else unchanged."""
    return value if value is None or type(value) is CodecOptions else adopt(value)


def adopt_write_models(models: Any) -> Any:
    """``bulk_write``'s list with PyMongo's write models made ours (the list itself when it
    holds none; anything but a list is left for the core to refuse)."""
    if type(models) is not list or all(isinstance(model, WriteModel) for model in models):
        return models
    return [adopt(model) for model in models]


def adopt_index_models(indexes: Any) -> Any:
    """``create_indexes``'s list with PyMongo's ``IndexModel`` made ours."""
    if not isinstance(indexes, list | tuple) or all(
        isinstance(index, IndexModel) for index in indexes
    ):
        return indexes
    return [adopt(index) for index in indexes]


def adopt_keywords(options: dict[str, Any]) -> dict[str, Any]:
    """Keyword options (``collation=Collation(...)``, ``cursor_type=CursorType.TAILABLE``...)
    with PyMongo's objects made ours; the dict itself when it holds none."""
    for key, value in options.items():
        if type(value) not in _NOT_PYMONGO and is_pymongo(value):
            return {key: adopt(value) for key, value in options.items()}
    return options


def adopt_cursor_type(value: Any) -> Any:
    """A ``cursor_type``: PyMongo's ``CursorType`` values are plain ints (NON_TAILABLE 0,
    TAILABLE 2, TAILABLE_AWAIT 34, EXHAUST 64); ours is an enum of the first three.  Exhaust
    cursors are not offered: ConfigurationError rather than a cursor of another kind."""
    if type(value) is not int:
        return value
    if value == _EXHAUST:
        raise ConfigurationError(
            "cursor_type: exhaust cursors (CursorType.EXHAUST) are not supported"
        )
    try:
        return CursorType(value)
    except ValueError:
        return value  # the core refuses it, naming it


_EXHAUST: Final = 64


# -- the client's keywords -------------------------------------------------------------------


def adopt_type_registry(type_registry: Any) -> None:
    """``MongoClient(type_registry=...)``: an empty one (PyMongo's default) is no change;
    custom types are not supported by our codec (ConfigurationError naming the gap)."""
    if type_registry is None or (
        is_pymongo(type_registry) and _type_registry_is_empty(type_registry)
    ):
        return
    raise ConfigurationError(
        "type_registry: custom type codecs (TypeCodec, TypeEncoder, TypeDecoder, "
        "fallback_encoder) are not supported by mongo_sansio's codec"
    )


def adopt_codec_keywords(codec: dict[str, Any]) -> Callable[[CodecOptions], CodecOptions]:
    """What the client's codec keywords (``document_class=SON``, ``RawBSONDocument``...) need
    done to the codec options built from them: PyMongo's document class means PyMongo's
    values back (``pymongo_types``), and PyMongo's ``RawBSONDocument`` documents of that class
    (read by PyMongo under the same options).  Identity when no class is PyMongo's."""
    document_class = codec.get("document_class")
    names = pymongo_base_names(document_class) if isinstance(document_class, type) else ()
    if not names:
        return _unchanged
    if "RawBSONDocument" not in names:
        return _with_pymongo_types

    def raw_documents(ours: CodecOptions) -> CodecOptions:
        # PyMongo's CodecOptions class, from the module the user's class came with
        pymongo_codec_options = sys.modules["bson.codec_options"].CodecOptions
        theirs = pymongo_codec_options(
            document_class=document_class,
            tz_aware=ours.tz_aware,
            uuid_representation=int(ours.uuid_representation),
            unicode_decode_error_handler=ours.unicode_decode_error_handler,
            tzinfo=ours.tzinfo,
            datetime_conversion=int(ours.datetime_conversion),
        )
        return ours.with_options(document_class=_raw_documents(theirs))

    return raw_documents


def _unchanged(ours: CodecOptions) -> CodecOptions:
    return ours


def _with_pymongo_types(ours: CodecOptions) -> CodecOptions:
    return ours.with_options(pymongo_types=True)


# -- listeners -------------------------------------------------------------------------------

#: PyMongo's listener base classes (``pymongo.monitoring``) -> the family of events they get
_LISTENER_FAMILIES: Final = {
    "CommandListener": "command",
    "ServerListener": "server",
    "ServerHeartbeatListener": "heartbeat",
    "TopologyListener": "topology",
    "ConnectionPoolListener": "connection",
}


def pymongo_listener_families(listener: object) -> frozenset[str]:
    """The event families a listener subclassing PyMongo's listener classes receives (its
    ``started``/``succeeded``/``failed``, ``opened``/``closed``/``description_changed``,
    ``pool_created``... methods are called with our events, which carry PyMongo's
    attributes); empty for anything else."""
    names = pymongo_base_names(type(listener))
    return frozenset(family for name, family in _LISTENER_FAMILIES.items() if name in names)
