"""A commit cut while it waits for a connection must not leave its transaction open.

The session's transaction wrote a document; its ``commit_transaction()`` waits for the only
connection of a ``maxPoolSize=1`` pool (held by a find the server blocks for 0.5 s) and is
cancelled there (an asyncio ``cancel()``, a trio cancel scope; a thread's timeout for the
blocking client: a KeyboardInterrupt-like BaseException thrown in is the same to the core).
Neither commit nor abort was sent, so the server holds the transaction, and its lock on the
document, until the transaction lifetime (60 s) ends it.  The client aborts it in the
background instead: a write to that document from another client then goes through within a
few seconds, and the session says what the server did (``cut_outcome``).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from async_kit import CANCELLED, KITS, Kit

import mongo_sansio.adapters.asyncio as asyncio_client
import mongo_sansio.adapters.trio as trio_client
from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.errors import OperationFailure

CLIENT_MODULES = {"asyncio": asyncio_client, "trio": trio_client}
BOUND = 4.0  # seconds the other writer may wait (the transaction lifetime is 60 s)


def block_next_find(rs: SimulatedReplicaSet, milliseconds: int) -> None:
    primary = rs.primary
    assert primary is not None
    rs.configure_failpoint(
        primary,
        {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": ["find"], "blockConnection": True, "blockTimeMS": milliseconds},
        },
    )


@pytest.mark.parametrize(
    "kit",
    [
        pytest.param(
            kit,
            id=kit.name,
            marks=pytest.mark.skipif(not kit.available, reason=f"{kit.name} is not installed"),
        )
        for kit in KITS
    ],
)
def test_a_commit_cancelled_waiting_for_a_connection_leaves_no_open_transaction(
    kit: Kit, rs: SimulatedReplicaSet
) -> None:
    client_class: Any = CLIENT_MODULES[kit.family].AsyncMongoClient

    async def main() -> dict[str, Any]:
        async with client_class(rs.uri, maxPoolSize=1) as client, client_class(
            rs.uri, timeoutMS=int(BOUND * 1000)
        ) as other:
            things = client.test.things
            await things.insert_one({"_id": 1, "n": 0})
            session = client.start_session()
            await session.start_transaction()
            await things.update_one({"_id": 1}, {"$set": {"n": 1}}, session=session)
            block_next_find(rs, 500)

            async def hold_the_connection() -> Any:
                return await things.find_one({"_id": 2})

            async def commit() -> Any:
                await kit.sleep(0.1)  # the find holds the connection by now
                return await kit.cancel_after(0.2, session.commit_transaction)

            _found, committed = await kit.gather(hold_the_connection, commit)
            assert committed is CANCELLED
            start = time.monotonic()
            await other.test.things.update_one({"_id": 1}, {"$set": {"n": 2}})
            waited = time.monotonic() - start
            assert waited < BOUND
            core_session = session.core_session(client.engine)
            await kit.wait_for(lambda: core_session.cut_outcome is not None, BOUND)
            assert core_session.cut_outcome == "aborted"
            assert (await other.test.things.find_one({"_id": 1}))["n"] == 2
            # a commit retried now is told the truth (Transactions spec: a retried commit)
            with pytest.raises(OperationFailure) as raised:
                await session.commit_transaction()
            assert raised.value.code == 251  # NoSuchTransaction
            assert raised.value.has_error_label("TransientTransactionError")
            await session.end_session()
            return {"other writer waited": round(waited, 2)}

    print(f"\ncut commit on {kit.name}: {kit.run(main)}")
