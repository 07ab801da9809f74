"""The workloads: what the world's client does while the faults happen, and what it saw.

Each workload is a set of tasks written against the ordinary async API (PyMongo's
``AsyncMongoClient``), recording every operation's outcome in the world's history
(:meth:`~.world.World.op`) and what the invariants later compare with the server's state:

``retryable-writes``  inserts and ``$push`` updates, ``w:1`` and ``w:majority``, retried by the
                      client as the spec says
``transactions``      ``with_transaction`` moving one unit between two accounts, and an
                      auditor reading both
``cursors``           finds over a fixed collection in small batches (getMores)
``change-streams``    a writer and a consumer that resumes from its last token by itself
``cancellation``      updates, finds and transactions cancelled at drawn points
``causal-reads``      causally consistent sessions writing (``w:majority``) then reading from
                      secondaries (``readConcern`` majority): each reads its own writes, and
                      never an older state than it read before
``spark-offsets``     the Spark source's micro-batches (offsets, partitions, replay after
                      restarts) over majority writes (:mod:`.spark`)
``mixed``             all of them at once (the default)
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from mongo_sansio.errors import MongoError, OperationFailure
from mongo_sansio.ops.write_concern import ReadConcern, WriteConcern
from mongo_sansio.selection.read_preference import ReadPreference

from .loop import Cancelled
from .spark import spark_driver, spark_writer

if TYPE_CHECKING:
    from .world import World

__all__ = ["WORKLOADS", "ITEMS", "setup"]

ITEMS = 23  # documents of the cursors' collection
_HISTORY_LOST = (280, 286)
_QUIET_POLLS = 3  # empty try_next answers (each waits up to maxAwaitTimeMS) before stopping  # ChangeStreamFatalError, ChangeStreamHistoryLost


async def setup(world: World) -> None:
    """The data the workloads start from (before any fault)."""
    db = world.client.chaos
    await db.items.insert_many([{"_id": i, "v": i * i} for i in range(ITEMS)])
    await db.bank.insert_many([{"_id": "a", "n": 0}, {"_id": "b", "n": 0}])
    await db.writes.insert_one({"_id": "counter", "applied": []})


async def retryable_writes(world: World, name: str) -> None:
    db = world.client.chaos
    collections = {
        "majority": db.get_collection("writes", write_concern=WriteConcern(w="majority")),
        "1": db.get_collection("writes", write_concern=WriteConcern(w=1)),
    }
    rng = world.rng
    for i in range(world.steps):
        w = rng.choice(("majority", "1"))
        coll = collections[w]
        key = f"{name}-{i}"
        await world.pause()
        if rng.random() < 0.5:
            ok, _ = await world.op(name, "insert", coll.insert_one({"_id": key, "w": w}))
            world.writes.append(("insert", key, w, ok))
        else:
            update = coll.update_one({"_id": "counter"}, {"$push": {"applied": key}})
            ok, _ = await world.op(name, "update", update)
            world.writes.append(("update", key, w, ok))


async def _move(session: Any) -> None:
    """One transfer (the with_transaction callback)."""
    bank = session.client.chaos.bank
    await bank.update_one({"_id": "a"}, {"$inc": {"n": -1}}, session=session)
    await bank.update_one({"_id": "b"}, {"$inc": {"n": 1}}, session=session)


async def transfers(world: World, name: str) -> None:
    for _ in range(max(1, world.steps // 2)):
        await world.pause()
        session = world.client.start_session()
        try:
            ok, _ = await world.op(name, "with_transaction", session.with_transaction(_move), factor=2)
        finally:
            await session.end_session()
        world.transfers.append(ok)


async def auditor(world: World, name: str) -> None:
    bank = world.client.chaos.bank
    for _ in range(max(1, world.steps // 2)):
        ok, docs = await world.op(name, "audit", bank.find({}).to_list())
        if ok and (len(docs) != 2 or sum(doc["n"] for doc in docs) != 0):
            world.violate(f"transaction seen half-applied: the accounts read {docs!r}")
        await world.pause()


_END = object()


async def _next_or_end(cursor: Any) -> Any:
    try:
        return await cursor.next()
    except StopAsyncIteration:
        return _END


async def readers(world: World, name: str) -> None:
    items = world.client.chaos.items
    for _ in range(max(1, world.steps // 3)):
        await world.pause()
        cursor = items.find({}, batch_size=world.rng.randint(2, 7)).sort("_id", 1)
        seen: list[Any] = []
        try:
            while True:
                ok, doc = await world.op(name, "cursor.next", _next_or_end(cursor))
                if not ok:
                    break
                if doc is _END:
                    if seen != list(range(ITEMS)):
                        world.violate(f"a cursor gave {seen!r}, not the {ITEMS} items once each in order")
                    break
                seen.append(doc["_id"])
        finally:
            await close_quietly(cursor)


async def feed_writer(world: World, name: str) -> None:
    feed = world.client.chaos.get_collection("feed", write_concern=WriteConcern(w="majority"))
    while not world.consumer_ready:
        await world.loop.sleep(0.05)
    for i in range(world.steps):
        ok, _ = await world.op(name, "insert", feed.insert_one({"_id": i}))
        world.feed_acked.extend([i] if ok else [])
        await world.pause()
    world.feed_writer_done = True


async def feed_consumer(world: World, name: str) -> None:
    """Consume the feed's inserts; when the stream fails past the driver's own resume, resume
    by hand from the last token seen (an application's way), or say it cannot."""
    feed = world.client.chaos.feed
    loop = world.loop
    stream: Any = None
    token: Any = None
    start = world.cluster.oplog.last_timestamp
    give_up = None
    quiet = 0  # empty answers in a row once every acknowledged insert was seen
    while True:
        if world.feed_writer_done:
            # an insert whose acknowledgement was lost may be committed too: drain until the
            # stream has been quiet a while past the last acknowledged one
            if set(world.feed_acked) <= set(world.feed_seen) and quiet >= _QUIET_POLLS:
                break
            give_up = loop.now + 120.0 if give_up is None else give_up
            if loop.now > give_up:
                world.violate(
                    "the change stream consumer never saw acknowledged inserts "
                    f"{sorted(set(world.feed_acked) - set(world.feed_seen))}"
                )
                break
        if stream is None:
            if token is not None:
                opening = feed.watch(resume_after=token)
            else:
                opening = feed.watch(start_at_operation_time=start)
            ok, stream = await world.op(name, "watch", opening)
            world.consumer_ready = True
            if not ok:
                if isinstance(stream, OperationFailure) and stream.code in _HISTORY_LOST:
                    world.feed_cannot_resume = f"{type(stream).__name__} {stream.code}"
                    return
                stream = None
                await loop.sleep(0.5)
            continue
        ok, change = await world.op(name, "try_next", stream.try_next())
        if not ok:
            await close_quietly(stream)
            stream = None  # the stream failed past its own resume: resume by hand
            continue
        if change is None:
            quiet += 1 if world.feed_writer_done and set(world.feed_acked) <= set(world.feed_seen) else 0
            continue
        quiet = 0
        token = change["_id"]
        if change.get("operationType") == "insert":
            world.feed_seen.append(change["documentKey"]["_id"])
    if stream is not None:
        await close_quietly(stream)


async def causal_reader(world: World, name: str) -> None:
    """A causally consistent session: it sets its own counter (``w:majority``), then reads
    every counter from a secondary (``secondary`` or ``secondaryPreferred``, ``readConcern``
    majority).  It must read its own last acknowledged write (or a later one of its unknown
    ones), and never an older value of any counter than it read before."""
    db = world.client.chaos
    writer = db.get_collection("causal", write_concern=WriteConcern(w="majority"))
    concern = ReadConcern("majority")
    modes = (ReadPreference.SECONDARY, ReadPreference.SECONDARY_PREFERRED)
    session = world.client.start_session(causal_consistency=True)
    acknowledged = -1  # this session's last acknowledged value
    seen: dict[str, int] = {}  # the newest value of each counter this session read
    try:
        for i in range(world.steps):
            await world.pause()
            update = writer.update_one({"_id": name}, {"$set": {"n": i}}, upsert=True, session=session)
            ok, _ = await world.op(name, "causal write", update)
            acknowledged = i if ok else acknowledged
            written_at = session.operation_time if ok else None
            mode = world.rng.choice(modes)
            reader = db.get_collection("causal", read_preference=mode, read_concern=concern)
            ok, docs = await world.op(name, f"causal read {mode.mode.value}", reader.find({}, session=session).to_list())
            if not ok:
                continue
            after = world.read_after(session)
            if written_at is not None and (after is None or after < written_at):
                world.violate(
                    f"{name}'s causal read asked for afterClusterTime {after} before its own write at {written_at}"
                )
            values = {doc["_id"]: doc.get("n", -1) for doc in docs}
            own = values.get(name, -1)
            if own < acknowledged:
                world.violate(f"{name}'s causal session read n={own} after its acknowledged write of n={acknowledged}")
            for key, value in values.items():
                if value < seen.get(key, -1):
                    world.violate(
                        f"{name}'s causal session read {key} back in time: n={value} after n={seen[key]}"
                    )
                seen[key] = max(value, seen.get(key, -1))
    finally:
        await session.end_session()


async def _cancellable(world: World, name: str, kind: str, key: str) -> None:
    """One operation that :func:`canceller` cancels at a drawn point."""
    db = world.client.chaos
    try:
        if kind == "update":
            world.writes.append(("update", key, "1", False))  # its outcome is never known
            await db.writes.update_one({"_id": "counter"}, {"$push": {"applied": key}})
        elif kind == "find":
            await db.items.find({}, batch_size=3).to_list()
        elif kind == "transaction":
            session = world.client.start_session()
            world.transfers.append(False)
            try:
                await session.with_transaction(_move)
            finally:
                await session.end_session()
        world.history.append(f"{name} {kind} {key} finished")
    except MongoError as error:
        world.history.append(f"{name} {kind} {key} {type(error).__name__}")
    except Cancelled:
        world.history.append(f"{name} {kind} {key} cancelled at {world.loop.now:.6f}")


async def canceller(world: World, name: str) -> None:
    """Start operations and cancel them at drawn points (a task cancelled, a timeout)."""
    loop = world.loop
    for i in range(max(1, world.steps // 2)):
        await world.pause()
        kind = world.rng.choice(("update", "find", "transaction"))
        child = loop.spawn(_cancellable(world, name, kind, f"{name}-{i}"), f"{name}-{i}")
        await loop.sleep(world.rng.uniform(0.0, 0.012))
        loop.cancel(child)
        await loop.join(child)


async def close_quietly(resource: Any) -> None:
    try:
        await resource.close()
    except MongoError:
        pass


Task = Callable[["World", str], Coroutine[Any, Any, None]]

#: workload name -> (task function, how many of it)
WORKLOADS: dict[str, list[tuple[Task, int]]] = {
    "retryable-writes": [(retryable_writes, 3)],
    "transactions": [(transfers, 2), (auditor, 1)],
    "cursors": [(readers, 2)],
    "change-streams": [(feed_writer, 1), (feed_consumer, 1)],
    "cancellation": [(canceller, 2)],
    "causal-reads": [(causal_reader, 2)],
    "spark-offsets": [(spark_writer, 1), (spark_driver, 1)],
}
WORKLOADS["mixed"] = [entry for name in list(WORKLOADS) for entry in WORKLOADS[name]]
