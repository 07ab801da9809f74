"""The blocking ``Collection``: one-line wrappers over the core's flows.

Each :class:`Collection` method builds a flow with
:class:`~mongo_sansio.ops.collection.CollectionOps` (which checks the arguments at once) and
runs it on the client's engine.  :meth:`Collection.find` returns a lazily opened
:class:`~.cursor.Cursor`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mongo_sansio.cursors import ChangeStreamTarget
from mongo_sansio.flow import Flow
from mongo_sansio.ops.collection import CollectionOps
from mongo_sansio.ops.results import (
    DeleteResult,
    InsertManyResult,
    InsertOneResult,
    UpdateResult,
)
from mongo_sansio.selection import ReadPreference

from ._engine import Engine
from .change_stream import ChangeStream, watch_options
from .cursor import Cursor

if TYPE_CHECKING:
    from .client import Database

__all__ = ["Collection"]


class Collection:
    """One collection; methods as in PyMongo (see the module docstring)."""

    def __init__(
        self, database: Database, name: str, *, read_preference: ReadPreference | None = None
    ) -> None:
        self.database = database
        self.name = name
        changes = {} if read_preference is None else {"read_preference": read_preference}
        self._ops: CollectionOps = database.ops.get_collection(name, **changes)
        self._engine: Engine = database.client.engine

    @property
    def full_name(self) -> str:
        return self._ops.full_name

    def __getitem__(self, name: str) -> Collection:
        """The sub-collection ``<this name>.<name>``."""
        return self.database.get_collection(f"{self.name}.{name}")

    def __getattr__(self, name: str) -> Collection:
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    @property
    def ops(self) -> CollectionOps:
        """The runtime-independent collection whose flows this one runs."""
        return self._ops

    @property
    def read_preference(self) -> ReadPreference:
        return self._ops.read_preference

    def _run(self, flow: Flow[Any]) -> Any:
        return self._engine.run(flow)

    # -- writes ----------------------------------------------------------------------------------

    def insert_one(self, document: Mapping[str, Any], **options: Any) -> InsertOneResult:
        result: InsertOneResult = self._run(self._ops.insert_one(document, **options))
        return result

    def insert_many(
        self, documents: Iterable[Mapping[str, Any]], ordered: bool = True, **options: Any
    ) -> InsertManyResult:
        result: InsertManyResult = self._run(self._ops.insert_many(documents, ordered, **options))
        return result

    def update_one(
        self, filter: Mapping[str, Any], update: Any, upsert: bool = False, **options: Any
    ) -> UpdateResult:
        result: UpdateResult = self._run(self._ops.update_one(filter, update, upsert, **options))
        return result

    def update_many(
        self, filter: Mapping[str, Any], update: Any, upsert: bool = False, **options: Any
    ) -> UpdateResult:
        result: UpdateResult = self._run(self._ops.update_many(filter, update, upsert, **options))
        return result

    def replace_one(
        self,
        filter: Mapping[str, Any],
        replacement: Mapping[str, Any],
        upsert: bool = False,
        **options: Any,
    ) -> UpdateResult:
        result: UpdateResult = self._run(
            self._ops.replace_one(filter, replacement, upsert, **options)
        )
        return result

    def delete_one(self, filter: Mapping[str, Any], **options: Any) -> DeleteResult:
        result: DeleteResult = self._run(self._ops.delete_one(filter, **options))
        return result

    def delete_many(self, filter: Mapping[str, Any], **options: Any) -> DeleteResult:
        result: DeleteResult = self._run(self._ops.delete_many(filter, **options))
        return result

    def drop(self, **options: Any) -> None:
        self._run(self._ops.drop(**options))

    # -- reads -----------------------------------------------------------------------------------

    def find(
        self, filter: Mapping[str, Any] | None = None, projection: Any = None, **options: Any
    ) -> Cursor:
        """A lazily opened cursor; ``options`` are find's (sort, skip, limit, batch_size ...)."""
        return Cursor(self._engine, self._ops, filter, projection, **options)

    def find_one(self, filter: Any = None, projection: Any = None, **options: Any) -> Any:
        return self._run(self._ops.find_one(filter, projection, **options))

    def aggregate(self, pipeline: list[Mapping[str, Any]], **options: Any) -> Cursor:
        opened = self._run(self._ops.aggregate(pipeline, **options))
        return Cursor(self._engine, opened=opened)

    def count_documents(self, filter: Mapping[str, Any], **options: Any) -> int:
        count: int = self._run(self._ops.count_documents(filter, **options))
        return count

    def estimated_document_count(self, **options: Any) -> int:
        count: int = self._run(self._ops.estimated_document_count(**options))
        return count

    def distinct(
        self, key: str, filter: Mapping[str, Any] | None = None, **options: Any
    ) -> list[Any]:
        values: list[Any] = self._run(self._ops.distinct(key, filter, **options))
        return values

    # -- change streams --------------------------------------------------------------------------

    def watch(
        self, pipeline: Sequence[Mapping[str, Any]] | None = None, **options: Any
    ) -> ChangeStream:
        """A change stream over this collection; ``options`` are PyMongo's (full_document,
        resume_after, start_after, max_await_time_ms, ...)."""
        return ChangeStream(
            self._engine,
            ChangeStreamTarget.collection(self._ops.database, self.name),
            pipeline,
            watch_options(**options),
            self.read_preference,
            self._ops.read_concern.to_document() or None,
        )

    def __repr__(self) -> str:
        return f"Collection({self.full_name!r})"
