"""One insert and one find with any runtime's client: ``round_trip("trio", uri, **options)``."""

from __future__ import annotations

from typing import Any

import pytest

RUNTIMES = ["blocking", "gevent", "asyncio", "trio"]


def round_trip(runtime: str, uri: str, **options: Any) -> Any:
    """Insert ``{_id: runtime}`` and read it back with ``runtime``'s client; returns what was
    read (the client is closed either way)."""
    if runtime in ("blocking", "gevent"):
        if runtime == "gevent":
            pytest.importorskip("gevent", reason="the gevent extra is not installed")
            from mongo_sansio.adapters.gevent import MongoClient
        else:
            from mongo_sansio.adapters.blocking import MongoClient
        with MongoClient(uri, **options) as client:
            client.test.things.replace_one({"_id": runtime}, {"_id": runtime}, upsert=True)
            return client.test.things.find_one({"_id": runtime})

    async def main() -> Any:
        if runtime == "asyncio":
            from mongo_sansio.adapters.asyncio import AsyncMongoClient
        else:
            from mongo_sansio.adapters.trio import AsyncMongoClient
        client = AsyncMongoClient(uri, **options)
        try:
            await client.test.things.replace_one({"_id": runtime}, {"_id": runtime}, upsert=True)
            return await client.test.things.find_one({"_id": runtime})
        finally:
            await client.close()

    if runtime == "asyncio":
        import asyncio

        return asyncio.run(main())
    import trio

    return trio.run(main)
