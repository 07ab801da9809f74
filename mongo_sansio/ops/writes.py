"""The single-statement and many-document writes of ``CollectionOps``: ``insert_one``,
``insert_many``, ``update_one``, ``update_many``, ``replace_one``, ``delete_one`` and
``delete_many`` (a mixin, as :mod:`mongo_sansio.ops.bulk` for ``bulk_write``).

Inputs: the caller's arguments, PyMongo-shaped, checked at once.  Outputs: flows from
:mod:`mongo_sansio.ops.crud`.  ``raw_data`` is the specifications' ``rawData`` option
(MongoDB 8.2, internal), left out of the command for older servers
(:func:`~mongo_sansio.ops.crud_commands.for_server`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.flow import Flow
from mongo_sansio.ops import crud
from mongo_sansio.ops.crud_commands import (
    ArgumentTypeError,
    delete_statement,
    prepare_insert,
    update_statement,
    write_command,
)
from mongo_sansio.ops.results import DeleteResult, InsertManyResult, InsertOneResult, UpdateResult
from mongo_sansio.ops.write_concern import WriteConcern

__all__ = ["WriteOps"]


class WriteOps:
    """The write methods of ``CollectionOps`` (a mixin: the collection's attributes are
    declared here)."""

    __slots__ = ()
    database: str
    name: str
    write_concern: WriteConcern
    codec_options: CodecOptions
    id_factory: Callable[[], Any]

    @property
    def _acknowledged(self) -> bool:
        return self.write_concern.acknowledged

    def _write(self, name: str, ordered: bool = True, **options: Any) -> dict[str, Any]:
        return write_command(
            name, self.name, ordered=ordered, write_concern=self.write_concern, **options
        )

    def insert_one(
        self,
        document: Mapping[str, Any],
        *,
        bypass_document_validation: bool | None = None,
        comment: Any = None,
        raw_data: bool | None = None,
    ) -> Flow[InsertOneResult]:
        """Insert ``document``; an ``_id`` is added to it when it has none (as PyMongo does)."""
        command = self._write(
            "insert",
            bypass_document_validation=bypass_document_validation,
            comment=comment,
            raw_data=raw_data,
        )
        to_send, inserted_id = prepare_insert(document, self.id_factory, self.codec_options)
        return crud.insert_one(
            self.database,
            command,
            to_send,
            inserted_id,
            acknowledged=self._acknowledged,
            codec_options=self.codec_options,
        )

    def insert_many(
        self,
        documents: Iterable[Mapping[str, Any]],
        ordered: bool = True,
        *,
        bypass_document_validation: bool | None = None,
        comment: Any = None,
        raw_data: bool | None = None,
    ) -> Flow[InsertManyResult]:
        """Insert ``documents`` in as few batches as the server allows; ``ordered`` stops at
        the first error.  Errors raise BulkWriteError (indexes in ``documents``)."""
        if isinstance(documents, Mapping | str | bytes) or not isinstance(documents, Iterable):
            raise ArgumentTypeError("documents must be a non-empty list")
        command = self._write(
            "insert",
            ordered,
            bypass_document_validation=bypass_document_validation,
            comment=comment,
            raw_data=raw_data,
        )
        prepared = [prepare_insert(document, self.id_factory, self.codec_options) for document in documents]
        if not prepared:
            raise ArgumentTypeError("documents must be a non-empty list")
        to_send = [document for document, _ in prepared]
        ids = [inserted_id for _, inserted_id in prepared]
        return crud.insert_many(
            self.database,
            command,
            to_send,
            ids,
            ordered=ordered,
            acknowledged=self._acknowledged,
            codec_options=self.codec_options,
        )

    def _update(
        self,
        filter: Any,
        update: Any,
        *,
        multi: bool,
        replacement: bool,
        upsert: bool,
        bypass_document_validation: bool | None,
        let: Any,
        comment: Any,
        raw_data: bool | None,
        **statement: Any,
    ) -> Flow[UpdateResult]:
        command = self._write(
            "update",
            let=let,
            comment=comment,
            bypass_document_validation=bypass_document_validation,
            raw_data=raw_data,
        )
        body = update_statement(
            filter, update, multi=multi, upsert=upsert, replacement=replacement, **statement
        )
        return crud.update(
            self.database,
            command,
            body,
            acknowledged=self._acknowledged,
            codec_options=self.codec_options,
        )

    def update_one(
        self,
        filter: Mapping[str, Any],
        update: Mapping[str, Any] | list[Mapping[str, Any]],
        upsert: bool = False,
        *,
        bypass_document_validation: bool | None = None,
        collation: Mapping[str, Any] | None = None,
        array_filters: list[Mapping[str, Any]] | None = None,
        hint: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        sort: Any = None,
        raw_data: bool | None = None,
    ) -> Flow[UpdateResult]:
        """Update the first document matching ``filter`` with update operators or a pipeline."""
        return self._update(
            filter,
            update,
            multi=False,
            replacement=False,
            upsert=upsert,
            bypass_document_validation=bypass_document_validation,
            let=let,
            comment=comment,
            raw_data=raw_data,
            collation=collation,
            array_filters=array_filters,
            hint=hint,
            sort=sort,
        )

    def update_many(
        self,
        filter: Mapping[str, Any],
        update: Mapping[str, Any] | list[Mapping[str, Any]],
        upsert: bool = False,
        *,
        bypass_document_validation: bool | None = None,
        collation: Mapping[str, Any] | None = None,
        array_filters: list[Mapping[str, Any]] | None = None,
        hint: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        raw_data: bool | None = None,
    ) -> Flow[UpdateResult]:
        """Update every document matching ``filter``."""
        return self._update(
            filter,
            update,
            multi=True,
            replacement=False,
            upsert=upsert,
            bypass_document_validation=bypass_document_validation,
            let=let,
            comment=comment,
            raw_data=raw_data,
            collation=collation,
            array_filters=array_filters,
            hint=hint,
        )

    def replace_one(
        self,
        filter: Mapping[str, Any],
        replacement: Mapping[str, Any],
        upsert: bool = False,
        *,
        bypass_document_validation: bool | None = None,
        collation: Mapping[str, Any] | None = None,
        hint: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        sort: Any = None,
        raw_data: bool | None = None,
    ) -> Flow[UpdateResult]:
        """Replace the first document matching ``filter`` (its ``_id`` is kept)."""
        return self._update(
            filter,
            replacement,
            multi=False,
            replacement=True,
            upsert=upsert,
            bypass_document_validation=bypass_document_validation,
            let=let,
            comment=comment,
            raw_data=raw_data,
            collation=collation,
            hint=hint,
            sort=sort,
        )

    def _delete(
        self,
        filter: Any,
        *,
        multi: bool,
        collation: Any,
        hint: Any,
        let: Any,
        comment: Any,
        raw_data: bool | None,
    ) -> Flow[DeleteResult]:
        command = self._write("delete", let=let, comment=comment, raw_data=raw_data)
        body = delete_statement(filter, multi=multi, collation=collation, hint=hint)
        return crud.delete(
            self.database,
            command,
            body,
            acknowledged=self._acknowledged,
            codec_options=self.codec_options,
        )

    def delete_one(
        self,
        filter: Mapping[str, Any],
        *,
        collation: Mapping[str, Any] | None = None,
        hint: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        raw_data: bool | None = None,
    ) -> Flow[DeleteResult]:
        """Delete the first document matching ``filter``."""
        return self._delete(
            filter,
            multi=False,
            collation=collation,
            hint=hint,
            let=let,
            comment=comment,
            raw_data=raw_data,
        )

    def delete_many(
        self,
        filter: Mapping[str, Any],
        *,
        collation: Mapping[str, Any] | None = None,
        hint: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        raw_data: bool | None = None,
    ) -> Flow[DeleteResult]:
        """Delete every document matching ``filter``."""
        return self._delete(
            filter,
            multi=True,
            collation=collation,
            hint=hint,
            let=let,
            comment=comment,
            raw_data=raw_data,
        )
