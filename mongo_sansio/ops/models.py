"""The write models of ``bulk_write``: PyMongo's ``InsertOne``, ``UpdateOne``, ``UpdateMany``,
``ReplaceOne``, ``DeleteOne`` and ``DeleteMany``.

Each model is a frozen value with PyMongo's constructor (same positional order and keywords).
Like PyMongo, a constructor checks the types of its options (``filter`` a mapping, ``upsert`` a
bool, ``array_filters`` a list, ``hint`` an index name or key specification ...) and raises
``TypeError`` (:class:`~mongo_sansio.ops.crud_commands.ArgumentTypeError`); the document, the
update and the replacement are checked when the bulk write is prepared
(:meth:`WriteModel.statement`), before anything is sent, as PyMongo checks them when it adds
them to its bulk.

Inputs: the caller's arguments.  Outputs: each model's command kind (``insert``, ``update``,
``delete``) and its statement (the document to insert, or an ``updates``/``deletes`` entry),
built with :mod:`mongo_sansio.ops.crud_commands`.  ``namespace`` is accepted (PyMongo's models
carry it for ``MongoClient.bulk_write``) and ignored by ``Collection.bulk_write``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import attrs

from mongo_sansio.ops.crud_commands import (
    ArgumentTypeError,
    check_mapping,
    delete_statement,
    hint_value,
    prepare_insert,
    sort_document,
    update_statement,
)

__all__ = [
    "WriteModel",
    "InsertOne",
    "UpdateOne",
    "UpdateMany",
    "ReplaceOne",
    "DeleteOne",
    "DeleteMany",
]


def _filter(_instance: Any, _attribute: Any, value: Any) -> None:
    check_mapping(value, "filter")


def _optional_mapping(_instance: Any, attribute: Any, value: Any) -> None:
    if value is not None:
        check_mapping(value, attribute.name)


def _upsert(_instance: Any, _attribute: Any, value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        raise ArgumentTypeError(f"upsert must be True or False, was: upsert={value!r}")


def _array_filters(_instance: Any, _attribute: Any, value: Any) -> None:
    if value is not None and not isinstance(value, list):
        raise ArgumentTypeError(f"array_filters must be a list, not {type(value).__name__}")


def _hint(_instance: Any, _attribute: Any, value: Any) -> None:
    if value is not None and not isinstance(value, str | list | tuple | Mapping):
        raise ArgumentTypeError(
            f"hint must be an index name or a list of (key, direction) pairs, not {value!r}"
        )
    hint_value(value)


def _sort(_instance: Any, _attribute: Any, value: Any) -> None:
    sort_document(value)


def _namespace(_instance: Any, _attribute: Any, value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise ArgumentTypeError(f"namespace must be a string, not {type(value).__name__}")


class WriteModel:
    """What every model offers ``bulk_write``: its command kind and its statement."""

    __slots__ = ()
    #: the write command that carries this model: "insert", "update" or "delete"
    kind: ClassVar[str]

    def statement(self, id_factory: Callable[[], Any]) -> tuple[Mapping[str, Any], Any]:
        """``(statement, inserted _id)``; the id is None but for :class:`InsertOne`.  Checks
        the document/update/replacement (TypeError or ValueError as PyMongo)."""
        raise NotImplementedError


@attrs.frozen
class InsertOne(WriteModel):
    """Insert ``document``; like ``insert_one``, a mutable document without ``_id`` gets one
    (in the caller's mapping) when the bulk write runs."""

    kind: ClassVar[str] = "insert"
    document: Any
    namespace: str | None = attrs.field(default=None, validator=_namespace)

    def statement(self, id_factory: Callable[[], Any]) -> tuple[Mapping[str, Any], Any]:
        return prepare_insert(self.document, id_factory)


@attrs.frozen
class _Update(WriteModel):
    filter: Mapping[str, Any] = attrs.field(validator=_filter)
    update: Any
    upsert: bool | None = attrs.field(default=None, validator=_upsert)
    collation: Mapping[str, Any] | None = attrs.field(default=None, validator=_optional_mapping)
    array_filters: list[Mapping[str, Any]] | None = attrs.field(
        default=None, validator=_array_filters
    )
    hint: Any = attrs.field(default=None, validator=_hint)
    namespace: str | None = attrs.field(default=None, validator=_namespace)

    kind: ClassVar[str] = "update"
    _multi: ClassVar[bool] = False

    def _sort(self) -> Any:
        return None

    def statement(self, id_factory: Callable[[], Any]) -> tuple[Mapping[str, Any], Any]:
        body = update_statement(
            self.filter,
            self.update,
            multi=self._multi,
            upsert=bool(self.upsert),
            array_filters=self.array_filters,
            collation=self.collation,
            hint=self.hint,
            sort=self._sort(),
        )
        return body, None


@attrs.frozen
class UpdateOne(_Update):
    """Update the first document matching ``filter`` (update operators or a pipeline);
    ``sort`` chooses which one (MongoDB 8.0+)."""

    sort: Any = attrs.field(default=None, validator=_sort)

    def _sort(self) -> Any:
        return self.sort


@attrs.frozen
class UpdateMany(_Update):
    """Update every document matching ``filter``."""

    _multi: ClassVar[bool] = True


@attrs.frozen
class ReplaceOne(WriteModel):
    """Replace the first document matching ``filter`` with ``replacement``."""

    kind: ClassVar[str] = "update"
    filter: Mapping[str, Any] = attrs.field(validator=_filter)
    replacement: Any
    upsert: bool | None = attrs.field(default=None, validator=_upsert)
    collation: Mapping[str, Any] | None = attrs.field(default=None, validator=_optional_mapping)
    hint: Any = attrs.field(default=None, validator=_hint)
    namespace: str | None = attrs.field(default=None, validator=_namespace)
    sort: Any = attrs.field(default=None, validator=_sort)

    def statement(self, id_factory: Callable[[], Any]) -> tuple[Mapping[str, Any], Any]:
        body = update_statement(
            self.filter,
            self.replacement,
            multi=False,
            replacement=True,
            upsert=bool(self.upsert),
            collation=self.collation,
            hint=self.hint,
            sort=self.sort,
        )
        return body, None


@attrs.frozen
class _Delete(WriteModel):
    filter: Mapping[str, Any] = attrs.field(validator=_filter)
    collation: Mapping[str, Any] | None = attrs.field(default=None, validator=_optional_mapping)
    hint: Any = attrs.field(default=None, validator=_hint)
    namespace: str | None = attrs.field(default=None, validator=_namespace)

    kind: ClassVar[str] = "delete"
    _multi: ClassVar[bool] = False

    def statement(self, id_factory: Callable[[], Any]) -> tuple[Mapping[str, Any], Any]:
        body = delete_statement(
            self.filter, multi=self._multi, collation=self.collation, hint=self.hint
        )
        return body, None


@attrs.frozen
class DeleteOne(_Delete):
    """Delete the first document matching ``filter``."""


@attrs.frozen
class DeleteMany(_Delete):
    """Delete every document matching ``filter``."""

    _multi: ClassVar[bool] = True
