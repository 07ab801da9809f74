"""A collection's write methods, written once for every flavour (PyMongo's names and
arguments): ``bulk_write``, ``insert_one``, ``insert_many``, ``replace_one``, ``update_one``,
``update_many``, ``delete_one``, ``delete_many`` and the ``find_one_and_*`` trio.  Each builds
its flow with :class:`~mongo_sansio.ops.collection.CollectionOps` (which checks the arguments
at once) and runs it with the caller's ``session`` under the collection's timeoutMS.

PyMongo has no ``rawData``; the methods without ``**kwargs`` take it as a keyword-only
argument in the specifications' spelling (the ``find_one_and_*`` trio takes it among its
command fields).  It is sent only to servers of MongoDB 8.2 or later."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mongo_sansio.flow import Flow
from mongo_sansio.ops.collection import CollectionOps
from mongo_sansio.ops.find_and_modify import ReturnDocument
from mongo_sansio.ops.models import WriteModel
from mongo_sansio.ops.results import (
    BulkWriteResult,
    DeleteResult,
    InsertManyResult,
    InsertOneResult,
    UpdateResult,
)

from .program import Program, Run, operation
from .pymongo_objects import adopt, adopt_keywords, adopt_write_models

__all__ = ["WriteMethods"]


class WriteMethods:
    """Mixed into the collection classes (which define what is declared here)."""

    _ops: CollectionOps

    if TYPE_CHECKING:

        def _op(self, flow: Flow[Any], session: Any = None) -> Run: ...

    @operation
    def bulk_write(
        self,
        requests: Sequence[WriteModel],
        ordered: bool = True,
        bypass_document_validation: bool | None = None,
        session: Any = None,
        comment: Any = None,
        let: Mapping[str, Any] | None = None,
        *,
        rawData: bool | None = None,  # noqa: N803 - the specifications' name (PyMongo has none)
    ) -> Program[BulkWriteResult]:
        """Send InsertOne/UpdateOne/UpdateMany/ReplaceOne/DeleteOne/DeleteMany ``requests``
        in as few commands as their order allows; errors raise BulkWriteError."""
        flow = self._ops.bulk_write(
            adopt_write_models(requests),
            ordered,
            bypass_document_validation=bypass_document_validation,
            comment=comment,
            let=let,
            raw_data=rawData,
        )
        result: BulkWriteResult = yield self._op(flow, session)
        return result

    @operation
    def insert_one(
        self,
        document: Mapping[str, Any],
        bypass_document_validation: bool | None = None,
        session: Any = None,
        comment: Any = None,
        *,
        rawData: bool | None = None,  # noqa: N803 - the specifications' name (PyMongo has none)
    ) -> Program[InsertOneResult]:
        flow = self._ops.insert_one(
            document,
            bypass_document_validation=bypass_document_validation,
            comment=comment,
            raw_data=rawData,
        )
        result: InsertOneResult = yield self._op(flow, session)
        return result

    @operation
    def insert_many(
        self,
        documents: Iterable[Mapping[str, Any]],
        ordered: bool = True,
        bypass_document_validation: bool | None = None,
        session: Any = None,
        comment: Any = None,
        *,
        rawData: bool | None = None,  # noqa: N803 - the specifications' name (PyMongo has none)
    ) -> Program[InsertManyResult]:
        flow = self._ops.insert_many(
            documents,
            ordered,
            bypass_document_validation=bypass_document_validation,
            comment=comment,
            raw_data=rawData,
        )
        result: InsertManyResult = yield self._op(flow, session)
        return result

    @operation
    def replace_one(
        self,
        filter: Mapping[str, Any],
        replacement: Mapping[str, Any],
        upsert: bool = False,
        bypass_document_validation: bool | None = None,
        collation: Mapping[str, Any] | None = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        sort: Any = None,
        comment: Any = None,
        *,
        rawData: bool | None = None,  # noqa: N803 - the specifications' name (PyMongo has none)
    ) -> Program[UpdateResult]:
        flow = self._ops.replace_one(
            filter,
            replacement,
            upsert,
            bypass_document_validation=bypass_document_validation,
            collation=adopt(collation),
            hint=hint,
            let=let,
            sort=sort,
            comment=comment,
            raw_data=rawData,
        )
        result: UpdateResult = yield self._op(flow, session)
        return result

    @operation
    def update_one(
        self,
        filter: Mapping[str, Any],
        update: Any,
        upsert: bool = False,
        bypass_document_validation: bool | None = None,
        collation: Mapping[str, Any] | None = None,
        array_filters: list[Mapping[str, Any]] | None = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        sort: Any = None,
        comment: Any = None,
        *,
        rawData: bool | None = None,  # noqa: N803 - the specifications' name (PyMongo has none)
    ) -> Program[UpdateResult]:
        flow = self._ops.update_one(
            filter,
            update,
            upsert,
            bypass_document_validation=bypass_document_validation,
            collation=adopt(collation),
            array_filters=array_filters,
            hint=hint,
            let=let,
            sort=sort,
            comment=comment,
            raw_data=rawData,
        )
        result: UpdateResult = yield self._op(flow, session)
        return result

    @operation
    def update_many(
        self,
        filter: Mapping[str, Any],
        update: Any,
        upsert: bool = False,
        array_filters: list[Mapping[str, Any]] | None = None,
        bypass_document_validation: bool | None = None,
        collation: Mapping[str, Any] | None = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        *,
        rawData: bool | None = None,  # noqa: N803 - the specifications' name (PyMongo has none)
    ) -> Program[UpdateResult]:
        flow = self._ops.update_many(
            filter,
            update,
            upsert,
            array_filters=array_filters,
            bypass_document_validation=bypass_document_validation,
            collation=adopt(collation),
            hint=hint,
            let=let,
            comment=comment,
            raw_data=rawData,
        )
        result: UpdateResult = yield self._op(flow, session)
        return result

    @operation
    def delete_one(
        self,
        filter: Mapping[str, Any],
        collation: Mapping[str, Any] | None = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        *,
        rawData: bool | None = None,  # noqa: N803 - the specifications' name (PyMongo has none)
    ) -> Program[DeleteResult]:
        flow = self._ops.delete_one(
            filter,
            collation=adopt(collation),
            hint=hint,
            let=let,
            comment=comment,
            raw_data=rawData,
        )
        result: DeleteResult = yield self._op(flow, session)
        return result

    @operation
    def delete_many(
        self,
        filter: Mapping[str, Any],
        collation: Mapping[str, Any] | None = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        *,
        rawData: bool | None = None,  # noqa: N803 - the specifications' name (PyMongo has none)
    ) -> Program[DeleteResult]:
        flow = self._ops.delete_many(
            filter,
            collation=adopt(collation),
            hint=hint,
            let=let,
            comment=comment,
            raw_data=rawData,
        )
        result: DeleteResult = yield self._op(flow, session)
        return result

    @operation
    def find_one_and_delete(
        self,
        /,
        filter: Mapping[str, Any],
        projection: Any = None,
        sort: Any = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Program[Any]:
        """Delete the first document matching ``filter`` and return it (None if none)."""
        flow = self._ops.find_one_and_delete(
            filter, projection, sort, hint, let=let, comment=comment, **adopt_keywords(kwargs)
        )
        return (yield self._op(flow, session))

    @operation
    def find_one_and_replace(
        self,
        /,
        filter: Mapping[str, Any],
        replacement: Mapping[str, Any],
        projection: Any = None,
        sort: Any = None,
        upsert: bool = False,
        return_document: bool = ReturnDocument.BEFORE,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Program[Any]:
        """Replace the first document matching ``filter``; the document before (or after,
        with ``return_document=ReturnDocument.AFTER``) the change, None if none matched."""
        flow = self._ops.find_one_and_replace(
            filter,
            replacement,
            projection,
            sort,
            upsert,
            return_document,
            hint,
            let=let,
            comment=comment,
            **adopt_keywords(kwargs),
        )
        return (yield self._op(flow, session))

    @operation
    def find_one_and_update(
        self,
        /,
        filter: Mapping[str, Any],
        update: Any,
        projection: Any = None,
        sort: Any = None,
        upsert: bool = False,
        return_document: bool = ReturnDocument.BEFORE,
        array_filters: list[Mapping[str, Any]] | None = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Program[Any]:
        """Update the first document matching ``filter``; the document before (or after,
        with ``return_document=ReturnDocument.AFTER``) the change, None if none matched."""
        flow = self._ops.find_one_and_update(
            filter,
            update,
            projection,
            sort,
            upsert,
            return_document,
            array_filters,
            hint,
            let=let,
            comment=comment,
            **adopt_keywords(kwargs),
        )
        return (yield self._op(flow, session))
