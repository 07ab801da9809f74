"""Cancelling an async change stream's ``try_next()`` at any point leaves the stream usable.

A reader calls ``try_next()`` under a tiny, random time limit (an asyncio task cancelled after
the delay; a trio ``move_on_after``) while a writer inserts, so the cut lands at every yield of
the stream's flows: a getMore in flight, the server selection or the killCursors or the
aggregate of a resume.  Whatever is cut, the next call goes on (resuming from the last event
returned), and every insert is seen exactly once, in order.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from async_kit import CANCELLED, KITS, Kit

import mongo_sansio.adapters.asyncio as asyncio_client
import mongo_sansio.adapters.trio as trio_client
from mongo_sansio import monitoring
from mongo_sansio.adapters.sim import SimulatedReplicaSet

pytestmark = pytest.mark.parametrize(
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

CLIENT_MODULES = {"asyncio": asyncio_client, "trio": trio_client}
MIN_EVENTS = 300
MAX_EVENTS = 5000
MIN_CUTS = 60
MIN_AGGREGATES = 15


@pytest.mark.parametrize("seed", [1, 2])
def test_cancelled_try_next_loses_and_repeats_nothing(
    kit: Kit, rs: SimulatedReplicaSet, seed: int
) -> None:
    draw = random.Random(seed)
    client_class: Any = CLIENT_MODULES[kit.family].AsyncMongoClient
    aggregates: list[str] = []

    class Aggregates(monitoring.CommandListener):
        def started(self, event: monitoring.CommandStartedEvent) -> None:
            if event.command_name == "aggregate":
                aggregates.append(event.command_name)

    async def main() -> dict[str, int]:
        async with client_class(
            rs.uri, serverSelectionTimeoutMS=5000, event_listeners=[Aggregates()]
        ) as client:
            things = client.test.things
            seen: list[int] = []
            written = 0
            writing = True
            cut = 0
            stream = await things.watch(max_await_time_ms=20)
            async with stream:

                async def write() -> None:
                    # until many calls were cut, many of them in a resume (a resume cut before
                    # its aggregate was sent leaves no aggregate; one cut after it, a second)
                    nonlocal written, writing
                    while written < MIN_EVENTS or (
                        (cut < MIN_CUTS or len(aggregates) < MIN_AGGREGATES)
                        and written < MAX_EVENTS
                    ):
                        await things.insert_many([{"_id": written + i} for i in range(10)])
                        written += 10
                        await kit.sleep(0.001)
                    writing = False

                async def read() -> None:
                    nonlocal cut
                    while writing or len(seen) < written:
                        # from 0 (cut at the first yield) to a few milliseconds (a getMore or
                        # a resume's aggregate in flight)
                        delay = draw.choice((0.0, 0.0001, 0.0005, draw.uniform(0, 0.004)))
                        change = await kit.cancel_after(delay, stream.try_next)
                        if change is CANCELLED:
                            cut += 1
                        elif change is not None:
                            seen.append(change["documentKey"]["_id"])
                            assert seen[-1] == len(seen) - 1, "an event lost or repeated"

                await kit.gather(read, write)
                assert stream.alive
            assert seen == list(range(written))
            assert cut >= MIN_CUTS and len(aggregates) >= MIN_AGGREGATES
            return {"events": written, "cut": cut, "aggregates": len(aggregates)}

    print(f"\nchange stream cancellations on {kit.name}: {kit.run(main)}")
