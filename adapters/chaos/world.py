"""One simulated world: a replica set (or a sharded cluster), a client, workloads and faults,
run from a seed.

:func:`run_world` builds the world for a seed, runs the setup, the workloads under the
seed's fault schedule, then brings it to quiescence (every fault ended) and checks the
invariants; :func:`shrink` drops faults from a breaking schedule while it still breaks.  The
outcome's trace hash covers the schedule, every operation's outcome and virtual times, the
network's cuts and the loop's step count: the same seed gives the same hash.

Invariants (the first broken one is reported):

- an acknowledged ``w:majority`` write is never lost; a retried write is applied at most once
  (an acknowledged one exactly once);
- a change-stream consumer sees every committed insert exactly once, in order, across its
  resumes, or says it cannot resume;
- a transaction is all or nothing to every reader, and every committed transfer is kept;
- a causal session reads its own writes and never goes back in time;
- every committed event of the Spark workload is in its sink exactly once, in order per key
  (:mod:`.spark`);
- a server session whose command was cut before its answer (a network error, cancelled) is
  never handed out again;
- in the sharded world (:mod:`.sharded`), a transaction's statements stay on its mongos;
- every operation with a deadline (the client's timeoutMS) ends by it in virtual time, and
  nothing waits forever;
- at quiescence no pool connection is checked out, no server session is held, no transaction
  is left open on the server, and after the client closes no server cursor of the workloads
  stays open.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import attrs

from mongo_sansio.errors import MongoError, NetworkError
from mongo_sansio.monitoring import CommandListener
from mongo_sansio.testing.server import STOPPED, ReplicaSet

from . import faults as _faults
from .faults import Fault
from .loop import Loop, VirtualTask
from .network import Network
from .runtime import ChaosMongoClient, VirtualRuntime
from .sharded import MONGOS, SHARD_MEMBERS, ShardedDeployment, shard_collections
from .spark import SparkLedger
from .workloads import WORKLOADS, setup

__all__ = ["Outcome", "World", "run_world", "shrink"]

MEMBERS = ("n0.sim:27017", "n1.sim:27017", "n2.sim:27017")
#: the deployments a world can have (``--world``)
DEPLOYMENTS = ("replica-set", "sharded")
#: virtual seconds the faults are drawn within
HORIZON = 12.0
#: the deployment's transactionLifetimeLimitSeconds
TRANSACTION_LIFETIME = 3
#: virtual seconds the workloads may take before a task counts as hung
HANG_LIMIT = 900.0


@attrs.frozen
class Outcome:
    seed: int
    ok: bool
    trace: str
    violation: str | None
    schedule: tuple[Fault, ...]
    virtual_seconds: float
    steps: int

    def line(self) -> str:
        """The final line the command prints."""
        if self.ok:
            return f"seed {self.seed}: ok, trace {self.trace}"
        faults = "; ".join(fault.describe() for fault in self.schedule) or "no faults"
        return f"seed {self.seed}: BROKEN {self.violation} -- faults: {faults}"


class World:
    """See the module docstring."""

    def __init__(
        self,
        seed: int,
        *,
        steps: int = 12,
        workload: str = "mixed",
        kinds: Sequence[str] = _faults.KINDS,
        schedule: Sequence[Fault] | None = None,
        deployment: str = "replica-set",
    ) -> None:
        if workload not in WORKLOADS:
            raise ValueError(f"unknown workload {workload!r}: one of {', '.join(WORKLOADS)}")
        if deployment not in DEPLOYMENTS:
            raise ValueError(f"unknown world {deployment!r}: one of {', '.join(DEPLOYMENTS)}")
        self.deployment = deployment
        members = MONGOS if deployment == "sharded" else MEMBERS
        self.seed = seed
        self.steps = steps
        self.workload = workload
        # the client's settings, the faults and the run each draw from their own stream, so a
        # schedule given (a shrunk one) or drawn from fewer kinds keeps the rest of the world
        plan = random.Random(f"mongo-sansio chaos plan {seed}")
        self.timeout = plan.choice((None, None, 3.0, 8.0))
        self.max_pool_size = plan.choice((None, None, 1, 2))
        # a short oplog (history lost): a change stream resuming from before it cannot resume
        self.oplog_entries = plan.choice((100_000, 100_000, 100_000, 60))
        # replication lag (seconds a secondary applies each entry late): w:1 writes are then
        # acknowledged before a majority has them, and a crashed primary's may be rolled back
        self.lags = tuple(plan.choice((0.0, 0.0, 0.05, 0.4, 1.5)) for _ in MEMBERS)
        shard_kinds = [kind for kind in kinds if kind in _faults.SHARD_KINDS]
        if deployment == "sharded":
            kinds = [kind for kind in kinds if kind in _faults.ROUTER_KINDS]
        else:
            kinds = [kind for kind in kinds if kind not in _faults.SHARD_KINDS]
        draws = random.Random(f"mongo-sansio chaos faults {seed}")
        count = draws.randint(1, 6)
        drawn = _faults.draw_schedule(draws, members, kinds, count, HORIZON)
        if deployment == "sharded":
            inside = random.Random(f"mongo-sansio chaos shard faults {seed}")
            drawn = tuple(sorted(drawn + _faults.draw_shard_schedule(inside, SHARD_MEMBERS, shard_kinds, HORIZON)))
        self.schedule: tuple[Fault, ...] = tuple(drawn if schedule is None else schedule)
        self.rng = random.Random(f"mongo-sansio chaos run {seed}")
        self.loop = Loop(self.rng)
        self.cluster: Any
        self.rollback_victims: dict[Fault, str | None] = {}  # (the faults' own notes)
        self.faults_on: set[Fault] = set()  # clock jumps and isolations begun, not yet undone
        self.isolations: dict[str, int] = {}  # how many faults hold each member cut off
        if deployment == "sharded":
            self.cluster = ShardedDeployment(seed=seed, now=self.loop.now, oplog_size=self.oplog_entries)
            uri = f"mongodb://{','.join(members)}/"
        else:
            self.cluster = ReplicaSet(list(members), seed=seed, now=self.loop.now, oplog_size=self.oplog_entries)
            self.cluster.replication.election_timeout = _faults.ELECTION_TIMEOUT
            # (a lagging secondary also holds a causal read until it has applied the session's time)
            for member, lag in zip(MEMBERS, self.lags, strict=True):
                self.cluster.set_lag(member, lag)
            uri = f"mongodb://{','.join(members)}/?replicaSet=rs0"
        self.network = Network(self.loop, self.cluster)
        self.runtime = VirtualRuntime(self.loop, self.network, self.rng)
        options: dict[str, Any] = {"retryWrites": True, "serverSelectionTimeoutMS": 30000}
        if self.timeout is not None:
            options["timeoutMS"] = int(self.timeout * 1000)
        if self.max_pool_size is not None:
            options["maxPoolSize"] = self.max_pool_size
        # a deployment's setParameter: a transaction a client leaves open holds its documents'
        # locks this long (mongod's default is 60 s)
        self.cluster.parameters["transactionLifetimeLimitSeconds"] = TRANSACTION_LIFETIME
        listener = _Commands(self.violate if deployment == "sharded" else None)
        self.commands = listener
        self.expired: list[tuple[str, int]] = []
        self.server_aborts: dict[tuple[str, int], str] = {}  # why the server ended each one
        self._watch_expiry()
        self.feed_committed: list[Any] = []  # the feed's inserts as the oplog took them
        self.feed_timestamps: list[Any] = []  # (their oplog timestamps: some may roll back)
        self.spark = SparkLedger()
        self._watch_oplog()
        self.client = ChaosMongoClient(uri, runtime=self.runtime, event_listeners=[listener], **options)
        self.history: list[str] = []
        self.violations: list[str] = []
        self._count_sessions()
        # what the workloads saw
        self.writes: list[tuple[str, str, str, bool]] = []
        self.transfers: list[bool] = []
        self.feed_acked: list[int] = []
        self.feed_seen: list[int] = []
        self.feed_cannot_resume: str | None = None
        self.feed_writer_done = False
        self.consumer_ready = False

    def _watch_oplog(self) -> None:
        """Note the feed's inserts as they are logged (the oplog itself may be truncated)."""
        for oplog in self._oplogs():
            oplog.append = functools.partial(self._watched_append, oplog.append)

    def _watched_append(self, append: Any, **fields: Any) -> Any:
        entry = append(**fields)
        for op in entry.operations():
            self.spark.note(op, entry.ts)
            if op.ns == "chaos.feed" and op.op == "i" and op.document_key is not None:
                self.feed_committed.append(op.document_key["_id"])
                self.feed_timestamps.append(entry.ts)
        return entry

    def _oplogs(self) -> list[Any]:
        """The server's oplogs: the replica set's, or each shard's."""
        return getattr(self.cluster, "oplogs", None) or [self.cluster.oplog]

    def _transaction_tables(self) -> list[Any]:
        """The server's transactions: the replica set's, or each shard's."""
        return getattr(self.cluster, "transaction_tables", None) or [self.cluster.transactions]

    def _open_transactions(self) -> list[Any]:
        return [t for table in self._transaction_tables() for t in table.by_session.values() if t.open]

    def _watch_expiry(self) -> None:
        """Note the transactions the server's lifetime limit ended (watching, not changing)."""
        for transactions in self._transaction_tables():
            transactions.abort = functools.partial(self._watched_abort, transactions.abort)

    def _watched_abort(self, abort: Any, txn: Any, reason: str) -> None:
        if txn.open:
            key = (_lsid_key(txn.lsid), txn.number)
            self.server_aborts[key] = reason
            if reason.startswith("exceeded transactionLifetimeLimitSeconds"):
                self.expired.append(key)
        abort(txn, reason)

    def _count_sessions(self) -> None:
        """Count server sessions taken from and given back to the client's pool (watching the
        pool, not changing what it does)."""
        pool = self.client._engine.core.sessions.pool
        acquire, release = pool.acquire, pool.release
        self.sessions_held = 0

        def counted_acquire(*args: Any) -> Any:
            self.sessions_held += 1
            session = acquire(*args)
            key = _lsid_key(session.session_id)
            self.commands.acquired.append((self.commands.sequence, key))
            if key in self.commands.cut_sessions:
                # the server may still run the cut command under it (a transaction statement,
                # a retryable write): mongod would see two operations' state mixed in one session
                self.violate(f"server session {key}, whose command was cut before its answer, was handed out again")
            return session

        def counted_release(*args: Any) -> Any:
            self.sessions_held -= 1
            return release(*args)

        pool.acquire = counted_acquire
        pool.release = counted_release

    # -- what workloads call ---------------------------------------------------------------------

    async def pause(self) -> None:
        """A drawn think time between two operations (spreads the workload over the faults)."""
        await self.loop.sleep(self.rng.uniform(0.0, 2.0 * HORIZON / max(1, self.steps)))

    def violate(self, message: str) -> None:
        self.violations.append(message)
        self.history.append(f"VIOLATION {message}")

    async def op(
        self, task: str, name: str, awaitable: Awaitable[Any], *, factor: float = 1.0, raise_: bool = False
    ) -> tuple[bool, Any]:
        """Await one operation, recording its outcome: (True, its result), or (False, the
        library error it raised).  Under the client's timeoutMS it must end within ``factor``
        times it."""
        start = self.loop.now
        outcome, error, result = "ok", None, None
        try:
            result = await awaitable
        except MongoError as exc:
            error = exc
            code = getattr(exc, "code", None)
            outcome = f"{type(exc).__name__}" + ("" if code is None else f"({code})")
        took = self.loop.now - start
        self.history.append(f"{task} {name} {outcome} {start:.6f} {took:.6f}")
        if self.timeout is not None and took > self.timeout * factor + 1e-6:
            self.violate(
                f"{task}'s {name} took {took:.3f}s of virtual time, past its timeoutMS of "
                f"{self.timeout:g}s ({outcome})"
            )
        if error is not None:
            if raise_:
                raise error
            return False, error
        return True, result

    def read_after(self, session: Any) -> Any:
        """The afterClusterTime the last read of ``session`` carried (None: none did)."""
        return self.commands.after_cluster_time.get(_lsid_key(session.session_id))

    # -- running ---------------------------------------------------------------------------------

    def _run(self, coro: Any, name: str, limit: float) -> VirtualTask:
        task = self.loop.spawn(coro, name)
        self.loop.run_until(lambda: task.done, self.loop.now + limit)
        return task

    def run(self) -> Outcome:
        """Run the world (the garbage collector only at fixed points: finalizers of dropped
        cursors run where they run for every replay of the seed).  Collections of the youngest
        generation suffice: with the collector off, everything the world allocates stays
        there."""
        gc.collect(0)
        gc.disable()
        try:
            return self._run_world()
        finally:
            self.discard()  # the world is over: its last background tasks too
            gc.enable()

    def discard(self) -> None:
        """Close the coroutines of the tasks that did not end (a world built only to read its
        schedule has the client's, never started)."""
        for task in self.loop.tasks:
            if not task.done:
                task.coro.close()

    def _run_world(self) -> Outcome:
        loop = self.loop
        task = self._run(self._setup(), "setup", 120.0)
        if not task.done or task.error is not None:
            self.violate(f"the setup failed without faults: {task.error!r}")
            return self._outcome()
        start = loop.now
        for fault in self.schedule:
            loop.call_at(start + fault.at, functools.partial(_faults.start, self, fault))
            if fault.duration:
                loop.call_at(start + fault.at + fault.duration, functools.partial(_faults.end, self, fault))
        self._tick(start + HANG_LIMIT)
        tasks = [
            loop.spawn(function(self, f"{function.__name__}{i}"), f"{function.__name__}{i}")
            for function, count in WORKLOADS[self.workload]
            for i in range(count)
        ]
        loop.run_until(lambda: all(task.done for task in tasks), start + HANG_LIMIT)
        for task in tasks:
            if not task.done:
                self.violate(f"{task.name} still waits after {HANG_LIMIT:g}s of virtual time")
                loop.cancel(task)
            elif task.error is not None:
                self.violate(f"{task.name} failed: {task.error!r}")
        self._quiesce(start)
        return self._outcome()

    async def _setup(self) -> None:
        if self.deployment == "sharded":
            await shard_collections(self)
        await setup(self)

    def _tick(self, until: float) -> None:
        """The cluster's periodic work (noop writes, transactions past their lifetime)."""

        def tick() -> None:
            self.cluster.tick(self.loop.now)
            self.network.flush_all()
            if self.loop.now < until:
                self.loop.call_at(self.loop.now + 1.0, tick)

        self.loop.call_at(self.loop.now + 1.0, tick)

    def _quiesce(self, start: float) -> None:
        loop = self.loop
        last_end = max((start + f.at + f.duration for f in self.schedule), default=start)
        loop.run_until(lambda: False, max(loop.now, last_end) + 0.001)
        for fault in self.schedule:
            _faults.end(self, fault)
        gc.collect(0)  # dropped cursors are finalized: their killCursors and sessions go back
        loop.run_until(lambda: False, loop.now + 5.0)  # background aborts, cursors killed
        in_use = {f"{h}:{p}": n for (h, p), n in self.client._engine.core.in_use_counts().items() if n}
        if in_use:
            self.violate(f"pool connections still checked out at quiescence: {in_use}")
        if self.sessions_held:
            self.violate(f"{self.sessions_held} server sessions still held at quiescence")
        for key in self.commands.abandoned_then_reused():
            self.violate(f"server session {key}, whose command was cut before its answer, was handed out again")
        # every transaction the client began, it ended (committed or aborted, maybe in the
        # background) before it used the session again, and none is open on the server at
        # quiescence -- unless the client's abort came first and was answered NoSuchTransaction
        # (the first statement, cut, reached the server after it).  The lifetime limit is the
        # server's backstop for a bounded background abort that could not get through: a
        # transaction it ended is not counted.
        open_now = {(_lsid_key(t.lsid), t.number) for t in self._open_transactions()}
        # one the server ended by itself (a stepdown, a failed statement) or never started
        # (its first statement lost) needed nothing from the client
        never_ended = sorted(
            key
            for key in self.commands.begun - self.commands.ended
            if key in open_now or self.server_aborts.get(key, "").startswith(_LEFT_BY_CLIENT)
        )
        if never_ended:
            self.violate(f"transactions the client neither committed nor aborted: {never_ended}")
        excused = self.commands.abort_missed
        open_txns = sorted(
            {(_lsid_key(t.lsid), t.number) for t in self._open_transactions()} - excused
        )
        if open_txns:
            self.violate(f"transactions left open on the server at quiescence: {open_txns}")
        self._check_data()
        self._check_clocks()
        closing = self._run(self.client.close(), "close", 60.0)
        if not closing.done:
            self.violate("closing the client did not end")
        elif closing.error is not None:
            self.violate(f"closing the client failed: {closing.error!r}")
        # a cursor whose first reply was lost (cut, cancelled) is the server's to time out: the
        # client never knew it; one it knew must have been exhausted or killed
        cursors = [
            (member.address, cursor.ns)
            for member in self.cluster.members.values()
            if member.state != STOPPED
            for cursor in member.cursors.cursors.values()
            if cursor.ns.startswith("chaos.") and cursor.id in self.commands.cursor_ids
        ]
        if cursors and not self._cursor_kill_may_fail():
            self.violate(f"server cursors left open after the client closed: {cursors}")

    def _cursor_kill_may_fail(self) -> bool:
        """Whether a cursor may be left on the server with no fault of the client: a
        killCursors is never retried (sent into a partition, a stall, a cut, a member that
        crashed), and, as PyMongo, a cursor whose getMore met a connection error -- a closed
        connection, or a pool cleared by a stepdown before it was sent -- is taken as dead and
        not killed.  So does a fail point's state-change error (shutdown, not primary,
        interrupted), which clears the pool.  Only a commit's writeConcernError leaves every
        cursor to the client."""
        return any(fault.detail != "commit-wce" for fault in self.schedule)

    def _check_clocks(self) -> None:
        """Cluster time never goes back, whatever the members' wall clocks do: the oplog's
        timestamps rise, and the client gossips the newest cluster time it was given."""
        for oplog in self._oplogs():
            stamps = [entry.ts for entry in oplog.entries]
            if any(later <= earlier for earlier, later in zip(stamps, stamps[1:], strict=False)):
                self.violate("the oplog's timestamps went back")
        if self.commands.cluster_time_regressions:
            self.violate(f"the client sent an older $clusterTime: {self.commands.cluster_time_regressions[0]}")

    def _check_data(self) -> None:
        data = self.cluster.databases.get("chaos", {})

        def documents(name: str) -> dict[Any, Any]:
            coll = data.get(name)
            return {} if coll is None else {doc["_id"]: doc for doc in coll.find({})}

        writes = documents("writes")
        applied = list(writes.get("counter", {}).get("applied", []))
        rolled_back = self._rolled_back_writes()
        for kind, key, w, ok in self.writes:
            if kind == "insert" and ok and w == "majority" and key not in writes:
                self.violate(f"acknowledged w:majority insert {key} was lost")
            elif kind == "insert" and ok and key not in writes and key not in rolled_back:
                self.violate(f"acknowledged w:{w} insert {key} was lost, and no rollback took it")
            if kind == "update":
                times = applied.count(key)
                if times > 1:
                    self.violate(f"retried update {key} was applied {times} times")
                elif ok and times == 0 and w == "majority":
                    self.violate(f"acknowledged w:majority update {key} was lost")
                elif ok and times == 0 and key not in rolled_back:
                    self.violate(f"acknowledged w:{w} update {key} was lost, and no rollback took it")
        bank = documents("bank")
        a, b = bank.get("a", {}).get("n"), bank.get("b", {}).get("n")
        if a is not None and b is not None:
            done = self.transfers.count(True)
            unknown = self.transfers.count(False)
            if a + b != 0:
                self.violate(f"a transaction was applied in part: a={a}, b={b}")
            elif not done <= b <= done + unknown:
                self.violate(f"{done} transfers committed ({unknown} unknown) but b={b}")
        self._check_feed()
        if self.workload in ("spark-offsets", "mixed"):
            self.spark.check(self)

    def rolled_back(self) -> set[Any]:
        """The oplog timestamps of every entry a rollback undid (in a sharded world, its
        shards' ``shard-isolate`` rollbacks)."""
        return {entry.ts for rollback in self._rollbacks() for entry in rollback.entries}

    def _rollbacks(self) -> list[Any]:
        if self.deployment == "sharded":
            return list(self.cluster.rollbacks)  # (its shards')
        return list(self.cluster.replication.rollbacks)

    def _rolled_back_writes(self) -> set[Any]:
        """The keys of the workloads' writes a rollback took back (a w:1 write may be lost
        only so): inserted ids, and the keys pushed by a rolled-back counter update."""
        keys: set[Any] = set()
        for rollback in self._rollbacks():
            for entry in rollback.entries:
                for op in entry.operations():
                    if op.ns != "chaos.writes" or op.document_key is None:
                        continue
                    keys.add(op.document_key.get("_id"))
                    before = (op.before or {}).get("applied", [])
                    keys.update(key for key in (op.after or {}).get("applied", []) if key not in before)
        return keys

    def _check_feed(self) -> None:
        if self.workload not in ("change-streams", "mixed"):
            return
        # a rolled-back insert was never committed: it must not have been delivered either
        rolled_back = self.rolled_back()
        committed = [key for key, ts in zip(self.feed_committed, self.feed_timestamps, strict=True)
                     if ts not in rolled_back]
        seen = self.feed_seen
        if set(seen) - set(committed):
            self.violate(f"the change stream delivered rolled-back inserts {sorted(set(seen) - set(committed))}")
        elif len(set(seen)) != len(seen):
            self.violate(f"the change stream delivered an event twice: {seen}")
        elif seen != committed[: len(seen)]:
            self.violate(f"the change stream saw {seen}, not in the committed order {committed}")
        elif self.feed_cannot_resume is None and len(seen) < len(committed):
            missing = committed[len(seen) :]
            self.violate(f"the change stream missed committed inserts {missing} without saying so")

    def _outcome(self) -> Outcome:
        digest = hashlib.sha256()
        for fault in self.schedule:
            digest.update(fault.describe().encode() + b"\n")
        for line in self.history + self.network.trace:
            digest.update(line.encode() + b"\n")
        digest.update(f"steps {self.loop.steps} now {self.loop.now:.6f}".encode())
        violation = self.violations[0] if self.violations else None
        return Outcome(
            self.seed,
            violation is None,
            digest.hexdigest()[:16],
            violation,
            self.schedule,
            self.loop.now - 1000.0,
            self.loop.steps,
        )


def _address(address: Any) -> str:
    return ":".join(str(part) for part in address) if isinstance(address, tuple) else str(address)


def _lsid_key(lsid: Any) -> str:
    return bytes(lsid["id"]).hex()[:12] if isinstance(lsid, Mapping) and "id" in lsid else "?"


class _Commands(CommandListener):
    """What the client sent and was answered, as far as the invariants need it (watching,
    deciding nothing): cursor ids it was given, transactions it began and ended."""

    def __init__(self, unpinned: Callable[[str], None] | None = None) -> None:
        #: where a sharded transaction's statement that left its mongos is reported
        self._unpinned = unpinned
        self._pinned: dict[tuple[str, int], Any] = {}  # transaction -> its first statement's mongos
        self.cursor_ids: set[int] = set()
        self.begun: set[tuple[str, int]] = set()
        self.ended: set[tuple[str, int]] = set()
        #: aborts answered NoSuchTransaction
        self.abort_missed: set[tuple[str, int]] = set()
        self._aborts: dict[int, tuple[str, int]] = {}
        self._cluster_time: Any = None  # the newest $clusterTime the client sent
        self.cluster_time_regressions: list[str] = []
        #: sessions (lsid keys) a command of which failed with a network error
        self.cut_sessions: set[str] = set()
        #: commands in flight (at quiescence: never answered) -> (lsid, when they started)
        self._sessions: dict[int, tuple[str, int]] = {}
        self.sequence = 0  # commands started so far (orders acquisitions and commands)
        self.acquired: list[tuple[int, str]] = []  # (sequence, lsid) of each session handed out
        #: session (lsid key) -> the afterClusterTime its last read carried
        self.after_cluster_time: dict[str, Any] = {}

    def abandoned_then_reused(self) -> list[str]:
        """Sessions handed out after one of their commands was abandoned (cancelled, timed
        out): a command started and never answered.  (Known only at quiescence: a command
        whose operation was cancelled may still be answered and read.)"""
        return sorted({
            lsid
            for request, (lsid, started) in self._sessions.items()
            for seq, taken in self.acquired
            if taken == lsid and seq > started
        })

    def started(self, event: Any) -> None:
        command = event.command
        gossip = command.get("$clusterTime")
        sent = gossip.get("clusterTime") if isinstance(gossip, Mapping) else None
        if sent is not None:
            if self._cluster_time is not None and sent < self._cluster_time:
                self.cluster_time_regressions.append(f"{event.command_name} sent {sent} after {self._cluster_time}")
            else:
                self._cluster_time = sent
        if "lsid" in command:
            self.sequence += 1
            self._sessions[event.request_id] = (_lsid_key(command["lsid"]), self.sequence)
        concern = command.get("readConcern")
        if event.command_name == "find" and isinstance(concern, Mapping) and "afterClusterTime" in concern:
            self.after_cluster_time[_lsid_key(command.get("lsid"))] = concern["afterClusterTime"]
        if "txnNumber" not in command or command.get("autocommit") is not False:
            return
        key = (_lsid_key(command.get("lsid")), int(command["txnNumber"]))
        if command.get("startTransaction"):
            self.begun.add(key)
        if event.command_name in ("commitTransaction", "abortTransaction"):
            self.ended.add(key)
        if event.command_name == "abortTransaction":
            self._aborts[event.request_id] = key
        if self._unpinned is not None:
            self._check_pinned(key, event, self._unpinned)

    def _check_pinned(self, key: tuple[str, int], event: Any, report: Callable[[str], None]) -> None:
        """A sharded transaction's statements go to the mongos its first statement went to
        (Transactions spec, "Mongos Pinning"): another mongos does not know the transaction.
        (Its commit or abort may go elsewhere once an error unpinned it, with the recovery
        token.)"""
        address = event.connection_id
        if event.command.get("startTransaction"):
            self._pinned[key] = address
        elif event.command_name not in ("commitTransaction", "abortTransaction"):
            pinned = self._pinned.get(key)
            if pinned is not None and pinned != address:
                report(
                    f"transaction {key}'s {event.command_name} went to {_address(address)}, "
                    f"not to {_address(pinned)} where it began"
                )

    def succeeded(self, event: Any) -> None:
        self._sessions.pop(event.request_id, None)
        cursor = event.reply.get("cursor") if hasattr(event.reply, "get") else None
        if isinstance(cursor, Mapping) and cursor.get("id"):
            self.cursor_ids.add(int(cursor["id"]))

    def failed(self, event: Any) -> None:
        key = self._aborts.pop(event.request_id, None)
        failure = getattr(event, "failure", None)
        lsid, _ = self._sessions.pop(event.request_id, (None, 0))
        if lsid is not None and isinstance(failure, Mapping) and failure.get("errtype") in _NETWORK_ERRORS:
            self.cut_sessions.add(lsid)
        if key is not None and isinstance(failure, Mapping) and failure.get("code") == _NO_SUCH_TRANSACTION:
            self.abort_missed.add(key)


_NO_SUCH_TRANSACTION = 251


def _subclass_names(cls: type[BaseException]) -> set[str]:
    names = {cls.__name__}
    for sub in cls.__subclasses__():
        names |= _subclass_names(sub)
    return names


#: the class names of network errors (a failed command event names its error's class)
_NETWORK_ERRORS = frozenset(_subclass_names(NetworkError))
#: how the server ends a transaction its client left open
_LEFT_BY_CLIENT = ("a newer", "the session was ended")


def run_world(
    seed: int,
    *,
    steps: int = 12,
    workload: str = "mixed",
    kinds: Sequence[str] = _faults.KINDS,
    schedule: Sequence[Fault] | None = None,
    deployment: str = "replica-set",
) -> Outcome:
    """Run the world of ``seed`` (with ``schedule`` instead of the seed's faults if given)."""
    return World(
        seed, steps=steps, workload=workload, kinds=kinds, schedule=schedule, deployment=deployment
    ).run()


def shrink(outcome: Outcome, *, steps: int = 12, workload: str = "mixed", deployment: str = "replica-set") -> Outcome:
    """The broken ``outcome`` with as few faults as still break an invariant: drop one fault at
    a time (first to last, again until none can go) while the world still breaks."""
    best = outcome
    changed = True
    while changed and best.schedule:
        changed = False
        for index in range(len(best.schedule)):
            trial = best.schedule[:index] + best.schedule[index + 1 :]
            result = run_world(outcome.seed, steps=steps, workload=workload, schedule=trial, deployment=deployment)
            if not result.ok:
                best, changed = result, True
                break
    return best
