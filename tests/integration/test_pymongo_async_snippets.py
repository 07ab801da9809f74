"""PyMongo's async API, with only the client import changed: the drop-in proof on asyncio and trio.

Each snippet of snippets_async.py runs with PyMongo's ``AsyncMongoClient`` on asyncio (the
expected outcome), then with our ``AsyncMongoClient`` on asyncio and on trio, every other name
PyMongo's (``ns``).  Outcomes are compared in the strict normal form of snippet_harness.py:
values of PyMongo's own classes, exceptions that are PyMongo's own exceptions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")
import trio  # noqa: E402
from snippet_harness import DB, Normaliser, pymongo_namespace  # noqa: E402
from snippets_async import ASYNC_SNIPPETS, AsyncSnippet  # noqa: E402

import mongo_sansio.adapters.asyncio as our_asyncio  # noqa: E402
import mongo_sansio.adapters.trio as our_trio  # noqa: E402
from mongo_sansio.adapters.sim import SimulatedReplicaSet  # noqa: E402

OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000}


@pytest.fixture(scope="module")
def served() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=3) as replica_set:
        yield replica_set


async def _outcome(client_class: Any, uri: str, fn: AsyncSnippet) -> Any:
    normalise = Normaliser(strict=True)
    client = client_class(uri, **OPTIONS)
    try:
        await client.drop_database(DB)
        try:
            return normalise(await fn(client, pymongo_namespace()))
        except Exception as exc:  # noqa: BLE001 - the outcome is the exception
            return normalise.exception(exc)
    finally:
        await client.close()


@pytest.mark.parametrize("fn", ASYNC_SNIPPETS, ids=[fn.__name__ for fn in ASYNC_SNIPPETS])
def test_async_snippet_with_only_the_client_import_changed(
    served: SimulatedReplicaSet, fn: AsyncSnippet
) -> None:
    expected = asyncio.run(_outcome(pymongo.AsyncMongoClient, served.uri, fn))
    assert expected[:1] != ("raised",) or "not PyMongo's" not in str(expected)
    on_asyncio = asyncio.run(_outcome(our_asyncio.AsyncMongoClient, served.uri, fn))
    on_trio = trio.run(_outcome, our_trio.AsyncMongoClient, served.uri, fn)
    assert on_asyncio == expected
    assert on_trio == expected
