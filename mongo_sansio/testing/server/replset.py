"""The simulated replica set's shared state: members, elections, the oplog, the data.

Inputs: construction arguments (member addresses, set name, seed, wall-clock offset, wire
version, an optional authenticator, the start time); ``connect(address, now)`` for each
accepted client connection; fault controls ``step_down``, ``elect``, ``stop``, ``restart``,
``set_lag``, ``isolate``, ``reconnect``, ``jump_clock``, ``truncate_oplog``.  Outputs:
:class:`~.connection.ServerConnection` objects; the cluster state the command handlers and the
tests read (``primary``, ``term``, ``election_id``, ``oplog``,
``databases``).  Connections waiting on the cluster (awaitable hello, blocked commands,
awaitData getMore) are poked after every topology change or write, so their replies are
ready from ``data_to_send()`` without a timer firing.

topologyVersion as mongod: a fault control notes every member's hello view (its state, the
``primary`` it reports, ``hosts``, setVersion, electionId) first, and afterwards every running
member whose view changed takes ``counter + 1`` once (the newly elected primary, the
stepped-down one, and the others, whose ``primary`` changed), then every awaitable hello is
answered.  A member whose view did not change keeps its version (a secondary stopping does not
move the others').  ``standalone=True`` makes one server that is not a replica set (hello
without setName; see :mod:`.handshake`); elections and stepdowns are refused there.

Time: every call that changes state takes ``now`` (monotonic seconds); the wall clock is
``now + wall_offset`` (the socket server passes ``time.time() - time.monotonic()``).
Randomness: a counter hashed with the seed (sha256), so a seed replays the same ids;
collection UUIDs have a counter of their own (:meth:`ReplicaSet.new_collection_uuid`).

Data is shared by all members (one set of engine Collections); what differs is how far each
member has applied the oplog (:mod:`.replication`: lag, the majority commit point that
``w:majority`` writes and change streams wait for, member partitions, elections after the
election timeout, rollback).  A member's position shows in what it reports (``lastWrite`` in
hello, for maxStalenessSeconds), but its reads see the primary's data: a knowing difference
from mongod.  Each member has its own wall clock (``jump_clock``); the oplog's clock (cluster
and operation times) never goes back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from mongo_sansio.bson import Binary, ObjectId
from mongo_sansio.errors import LocalProtocolError
from mongo_sansio.testing.engine import Collection, WriteEvent
from mongo_sansio.testing.server.auth import Authenticator
from mongo_sansio.testing.server.cursors import CursorRegistry
from mongo_sansio.testing.server.failpoints import FailPoints
from mongo_sansio.testing.server.oidc import OidcIssuer
from mongo_sansio.testing.server.oplog import Oplog, OplogEntry, wall_datetime
from mongo_sansio.testing.server.replication import Replication
from mongo_sansio.testing.server.sessions import Sessions
from mongo_sansio.testing.server.transactions import Transactions

if TYPE_CHECKING:
    from mongo_sansio.testing.server.connection import ServerConnection

__all__ = ["ReplicaSet", "Member", "PRIMARY", "SECONDARY", "STOPPED"]

PRIMARY = "PRIMARY"
SECONDARY = "SECONDARY"
STOPPED = "STOPPED"
PERIODIC_NOOP_SECONDS = 10.0  # mongod's primary writes a noop this often when idle


@attrs.define(eq=False)
class Member:
    address: str
    state: str
    process_id: ObjectId
    failpoints: FailPoints
    cursors: CursorRegistry
    counter: int = 0  # topologyVersion.counter
    lag: float = 0.0  # seconds of replication lag (a secondary applies an entry this late)
    clock_skew: float = 0.0  # seconds this member's wall clock is off (a clock jump)
    connections: list[ServerConnection] = attrs.Factory(list)


class ReplicaSet:
    """See the module documentation (and the package's for an example)."""

    def __init__(
        self,
        members: Sequence[str],
        *,
        set_name: str = "rs0",
        seed: int = 0,
        wall_offset: float = 1_700_000_000.0,
        max_wire_version: int = 21,
        authenticator: Authenticator | None = None,
        oidc: OidcIssuer | None = None,
        now: float = 0.0,
        oplog_size: int = 100_000,
        standalone: bool = False,
    ) -> None:
        if not members or len(set(members)) != len(members):
            raise LocalProtocolError("a replica set needs one or more distinct member addresses")
        if standalone and len(members) != 1:
            raise LocalProtocolError("a standalone server has exactly one address")
        if max_wire_version not in (21, 25):
            raise LocalProtocolError("max_wire_version is 21 (mongod 7.0) or 25 (mongod 8.0)")
        self.set_name = set_name
        self.standalone = standalone
        self._changing = 0  # nesting depth of fault controls in progress (see _begin_change)
        self.seed = seed
        self.wall_offset = wall_offset
        self.max_wire_version = max_wire_version
        self.authenticator = authenticator
        #: the OIDC identity provider whose HS256 tokens MONGODB-OIDC accepts (None: no OIDC)
        self.oidc = oidc
        self.set_version = 1
        self.term = 0
        self.election_id = ObjectId(b"\x7f\xff\xff\xff" + bytes(8))
        self.oplog = Oplog(oplog_size)
        #: when set, the oplog keeps only this many newest entries, as a capped oplog.rs that
        #: a burst of writes fills (never dropping one past the majority commit point)
        self.oplog_limit: int | None = None
        self.replication = Replication(self)
        self.sessions = Sessions()
        self.transactions = Transactions(self)
        # setParameter / getParameter values (mongod's defaults).
        self.parameters: dict[str, Any] = {"transactionLifetimeLimitSeconds": 60}
        self.databases: dict[str, dict[str, Collection]] = {}
        # "db.coll" of collections with changeStreamPreAndPostImages enabled (create / collMod).
        self.image_namespaces: set[str] = set()
        # "db.coll" of capped collections -> the options they were created with.
        self.capped: dict[str, dict[str, Any]] = {}
        # "db.coll" of clustered collections -> their clusteredIndex option.
        self.clustered: dict[str, dict[str, Any]] = {}
        # "db.coll" of time series collections -> the options they are listed with.
        self.timeseries: dict[str, dict[str, Any]] = {}
        self._draws = 0
        self._uuid_draws = 0
        self._oid_counter = int.from_bytes(self.random_bytes(3), "big")
        self._oid_random = self.random_bytes(5)
        self._connection_ids = 0
        self.started = now
        self.members: dict[str, Member] = {}
        for address in members:
            self.members[address] = Member(
                address, SECONDARY, self._process_id(now), FailPoints(), CursorRegistry(self.new_cursor_id)
            )
        # The write in progress: the wall time and the session of the command (for the oplog).
        self._write_wall = self._base_wall = self.wall(now)
        self._write_now = now
        self._write_session: tuple[Any, int | None] = (None, None)
        self._poke_all_later = False
        self.primary: str | None = None
        self._append(now, term=0, wall=self.wall(now), op="n", kind="initiate", ns="")
        self.replication.initiated()
        if standalone:
            # Not a replica set: always writable; the oplog stays an internal clock (hello,
            # replies and commands do not show it).
            self._install_primary(self.members[members[0]], now)
        else:
            self.elect(members[0], now)

    # --- time and randomness ---------------------------------------------------------------

    @property
    def auth_enabled(self) -> bool:
        """Whether commands need an authenticated connection (SCRAM users or OIDC)."""
        return self.authenticator is not None or self.oidc is not None

    def wall(self, now: float) -> float:
        return now + self.wall_offset

    def member_wall(self, member: Member, now: float) -> float:
        """``member``'s wall clock (the cluster's, off by the member's clock skew)."""
        return self.wall(now) + member.clock_skew

    def _primary_wall(self, now: float) -> float:
        return self.wall(now) + (self.members[self.primary].clock_skew if self.primary is not None else 0.0)

    def random_bytes(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            self._draws += 1
            out += hashlib.sha256(f"{self.seed}:{self._draws}".encode()).digest()
        return out[:n]

    def new_collection_uuid(self) -> Binary:
        """A new collection's UUID: binary subtype 4 holding a version 4 UUID, as mongod's.
        It is drawn from its own seeded counter, so that creating collections does not move
        the other seeded ids (cursor ids, process ids) that a seed replays."""
        self._uuid_draws += 1
        raw = bytearray(hashlib.sha256(f"{self.seed}:uuid:{self._uuid_draws}".encode()).digest()[:16])
        raw[6] = (raw[6] & 0x0F) | 0x40  # the version (4: random)
        raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
        return Binary(bytes(raw), 4)

    def random_fraction(self) -> float:
        """A seeded draw in [0, 1) (aggregation's $rand)."""
        return int.from_bytes(self.random_bytes(7), "big") / float(1 << 56)

    def _process_id(self, now: float) -> ObjectId:
        return ObjectId.from_parts(int(self.wall(now)), self.random_bytes(5), int.from_bytes(self.random_bytes(3), "big"))

    def new_object_id(self) -> ObjectId:
        self._oid_counter = (self._oid_counter + 1) & 0xFFFFFF
        return ObjectId.from_parts(int(self._write_wall), self._oid_random, self._oid_counter)

    def new_cursor_id(self) -> int:
        return (int.from_bytes(self.random_bytes(8), "big") & 0x3FFF_FFFF_FFFF_FFFF) or 1

    @property
    def connections_created(self) -> int:
        return self._connection_ids

    def new_connection_id(self) -> int:
        self._connection_ids += 1
        return self._connection_ids

    # --- members and connections -----------------------------------------------------------

    def member(self, address: str) -> Member:
        try:
            return self.members[address]
        except KeyError:
            raise LocalProtocolError(f"{address!r} is not a member of the replica set") from None

    def connect(self, address: str, now: float) -> ServerConnection:
        """A new client connection to ``address`` (closed at once when the member is stopped)."""
        from mongo_sansio.testing.server.connection import ServerConnection

        member = self.member(address)
        connection = ServerConnection(self, member, self.new_connection_id(), now)
        if member.state == STOPPED:
            connection.close("member is stopped")
        else:
            member.connections.append(connection)
        return connection

    def forget(self, connection: ServerConnection) -> None:
        member = connection.member
        if connection in member.connections:
            member.connections.remove(connection)

    def _poke_all(self, now: float) -> None:
        for member in self.members.values():
            for connection in list(member.connections):
                connection.poke(now)

    # --- topologyVersion -------------------------------------------------------------------

    def _view(self, member: Member) -> tuple[Any, ...]:
        """What a member's hello says about the set: when it changes, so does its reply."""
        return (
            member.state, self.primary, self.set_version, tuple(self.members),
            self.election_id if member.state == PRIMARY else None,
        )

    def _begin_change(self) -> dict[str, tuple[tuple[Any, ...], int, ObjectId]] | None:
        """Note every member's view before a change (None inside a change already begun)."""
        self._changing += 1
        if self._changing > 1:
            return None
        return {a: (self._view(m), m.counter, m.process_id) for a, m in self.members.items()}

    def _end_change(self, before: dict[str, tuple[tuple[Any, ...], int, ObjectId]] | None, now: float) -> None:
        """As mongod: every running member whose hello reply changed (its state, or the
        ``primary``/``hosts`` it reports) takes a new topologyVersion, unless the change gave
        it one already (a stepdown bumps before interrupting; a restart starts a new process),
        and every waiting awaitable hello is answered at once."""
        self._changing -= 1
        if before is None:
            return
        for address, member in self.members.items():
            view, counter, process_id = before[address]
            moved = member.counter != counter or member.process_id != process_id
            if member.state != STOPPED and not moved and self._view(member) != view:
                member.counter += 1
        self._poke_all(now)

    def topology_changed(self, now: float) -> None:
        """Answer every waiting awaitable hello whose member's topologyVersion moved."""
        self._poke_all(now)

    # --- fault controls --------------------------------------------------------------------

    def _replica_set_only(self, what: str) -> None:
        if self.standalone:
            raise LocalProtocolError(f"a standalone server cannot {what}")

    @property
    def has_majority(self) -> bool:
        """A majority of the (all voting) members runs: only then can a primary be elected or
        stay primary."""
        running = sum(1 for m in self.members.values() if m.state != STOPPED)
        return running * 2 > len(self.members)

    def elect(self, address: str, now: float) -> None:
        """Make ``address`` primary in a new term (a new electionId); the old primary, if any,
        steps down first (its in-flight operations fail with InterruptedDueToReplStateChange).
        Refused (LocalProtocolError) while a majority of the members is stopped: no member
        can win an election then."""
        self._replica_set_only("hold elections")
        member = self.member(address)
        if member.state == STOPPED:
            raise LocalProtocolError(f"cannot elect {address}: it is stopped")
        if not self.has_majority:
            raise LocalProtocolError(f"cannot elect {address}: a majority of the members is stopped")
        replication = self.replication
        if not replication.has_majority(replication.side(address)):
            raise LocalProtocolError(f"cannot elect {address}: it does not see a majority of the members")
        before = self._begin_change()
        try:
            if self.primary is not None:
                self._demote(self.members[self.primary], now)
            self._install_primary(member, now)
        finally:
            self._end_change(before, now)

    def _install_primary(self, member: Member, now: float) -> None:
        self.term += 1
        self.election_id = ObjectId(b"\x7f\xff\xff\xff" + self.term.to_bytes(8, "big"))
        self.replication.catch_up(member.address, now)
        member.state = PRIMARY
        self.primary = member.address
        self._append(now, term=self.term, wall=self._primary_wall(now), op="n", kind="new primary", ns="")

    def _demote(self, member: Member, now: float) -> None:
        self.transactions.abort_all("the primary stepped down")  # as mongod, on stepdown
        self.replication.stepped_down(member.address)
        member.state = SECONDARY
        member.counter += 1  # as mongod: the new topologyVersion is on the interrupted replies
        self.primary = None
        for connection in list(member.connections):
            connection.interrupt(now)

    def step_down(self, now: float, *, successor: str | None = None) -> None:
        """The primary steps down and ``successor`` (default: the next running member after
        it) is elected; with no member to elect (or no majority running) the set is left
        without a primary."""
        self._replica_set_only("step down")
        old = self.primary
        if old is None:
            raise LocalProtocolError("there is no primary to step down")
        before = self._begin_change()
        try:
            self._demote(self.members[old], now)
            chosen = successor if successor is not None else self._next_electable(old)
            if chosen is not None:
                self.elect(chosen, now)
        finally:
            self._end_change(before, now)

    def _next_electable(self, after: str) -> str | None:
        """The member elected after ``after``: the most up-to-date of a majority side, the
        first after ``after`` in member order among equals."""
        names = list(self.members)
        start = names.index(after)
        return self.replication.best_candidate([names[(start + offset) % len(names)] for offset in range(1, len(names))])

    def stop(self, address: str, now: float) -> None:
        """Shut a member down: its connections close, its cursors go; a stopped primary is
        replaced by the next running member when a majority still runs.  When the running
        members are no longer a majority, a primary still running steps down (as mongod's
        does when it cannot see a majority; here in the same instant, as elections are), so
        the set has no primary until a majority runs again."""
        member = self.member(address)
        before = self._begin_change()
        try:
            was_primary = member.state == PRIMARY
            if was_primary:
                self._demote(member, now)
            member.state = STOPPED
            member.cursors.clear()
            for connection in list(member.connections):
                connection.close("member stopped")
            member.connections.clear()
            if self.standalone:
                self.primary = None
                return
            if not self.has_majority:
                if self.primary is not None:
                    self._demote(self.members[self.primary], now)
                return
            successor = self._next_electable(address) if was_primary else None
            if successor is not None:
                self.elect(successor, now)
            if self.replication.isolated:
                self.replication.unsettle(now)
        finally:
            self._end_change(before, now)

    def restart(self, address: str, now: float) -> None:
        """Bring a stopped member back as a secondary (a new processId, counter 0); a
        standalone server comes back as itself.  When the set has no primary and a majority
        runs again, an election is held at once: the first running member in member order
        that was already running wins (a member just restarted is still catching up), else
        the restarted one."""
        member = self.member(address)
        if member.state != STOPPED:
            return
        before = self._begin_change()
        try:
            member.state = SECONDARY
            member.process_id = self._process_id(now)
            member.counter = 0
            member.failpoints = FailPoints()
            if self.standalone:
                member.state = PRIMARY
                self.primary = address
            elif self.primary is None and self.has_majority:
                others = [a for a in self.members if a != address]
                winner = self.replication.best_candidate([*others, address])
                if winner is not None:
                    self.elect(winner, now)
            if self.replication.isolated:
                self.replication.unsettle(now)
        finally:
            self._end_change(before, now)

    def set_lag(self, address: str, seconds: float) -> None:
        """``address`` applies each oplog entry ``seconds`` after it was written (the hello
        it answers reports that position; ``w:majority`` waits for a majority to apply)."""
        self.member(address).lag = max(0.0, float(seconds))

    def isolate(self, address: str, now: float) -> None:
        """Cut ``address`` off from the other members (clients still reach it): it stops
        replicating; a primary so cut off steps down after the election timeout, when the
        others (a majority) elect a new one, and what only it had is rolled back."""
        self.member(address)
        self._replica_set_only("partition members")
        self.replication.isolate(address, now)
        self._poke_all(now)

    def reconnect(self, address: str, now: float) -> None:
        """``address`` sees the other members again (it catches up from the primary)."""
        self.member(address)
        self.replication.reconnect(address, now)
        self._poke_all(now)

    def jump_clock(self, address: str, seconds: float) -> None:
        """``address``'s wall clock jumps by ``seconds`` (forward or back).  Cluster times
        stay monotonic (the oplog's clock never goes back); wall times written by it jump."""
        self.member(address).clock_skew += float(seconds)

    def truncate_oplog(self, keep_after: Any) -> int:
        """Drop the oplog's entries before the Timestamp ``keep_after`` (as its capped
        collection does when it fills), never one past the majority commit point and never the
        last; the number dropped."""
        oplog = self.oplog
        bound = min(keep_after, self.replication.commit_point)
        cut = min(oplog.index_from(bound), len(oplog.entries) - 1)
        if cut <= 0:
            return 0
        del oplog.entries[:cut]
        return cut

    # --- the data --------------------------------------------------------------------------

    def tick(self, now: float) -> None:
        """Time passed: an idle primary writes its periodic noop (mongod does every 10 s), so
        secondaries' lastWriteDate stays meaningful for maxStalenessSeconds; transactions past
        their lifetime limit are aborted."""
        self.transactions.expire(now)
        if self.replication.advance(now):
            self._poke_all(now)  # majority writes and change streams waiting for the commit point
        self._hold_due_election(now)
        last = self.oplog.last
        wall = self._primary_wall(now)
        if self.primary is not None and last is not None and wall - last.wall >= PERIODIC_NOOP_SECONDS:
            self._append(now, term=self.term, wall=wall, op="n", kind="periodic noop", ns="")

    def _hold_due_election(self, now: float) -> None:
        """Past the election timeout since members lost sight of each other: a primary that
        sees no majority steps down, and a majority side elects one (see .replication)."""
        due = self.replication.due_election(now)
        if due is None:
            return
        step_down, winner = due
        before = self._begin_change()
        try:
            if step_down and self.primary is not None:
                self._demote(self.members[self.primary], now)
            if winner is not None and self.primary is None:
                self.elect(winner, now)
        finally:
            self._end_change(before, now)

    def _append(self, now: float, **fields: Any) -> OplogEntry:
        entry = self.oplog.append(**fields)
        self.replication.appended(entry, now)
        self._keep_oplog_limit()
        return entry

    def limit_oplog(self, entries: int | None) -> None:
        """Keep only the ``entries`` newest oplog entries from now on (None: no limit)."""
        self.oplog_limit = None if entries is None else max(1, entries)
        self._keep_oplog_limit()

    def _keep_oplog_limit(self) -> None:
        limit = self.oplog_limit
        if limit is not None and len(self.oplog.entries) > limit:
            self.truncate_oplog(self.oplog.entries[-limit].ts)

    def begin_write(self, now: float, lsid: Any = None, txn_number: int | None = None) -> None:
        """Set the context the next writes are logged with (the command layer calls this)."""
        self._base_wall = max(self.wall(now), self._base_wall)
        self._write_wall = self._base_wall + (self._primary_wall(now) - self.wall(now))
        self._write_now = now
        self._write_session = (lsid, txn_number)

    def log(self, op: str, kind: str, ns: str, **fields: Any) -> OplogEntry:
        lsid, txn_number = self._write_session
        entry = self._append(
            self._write_now, term=self.term, wall=self._write_wall, op=op, kind=kind, ns=ns, lsid=lsid, txn_number=txn_number, **fields
        )
        self._poke_all_later = True
        return entry

    def changed(self) -> None:
        """Something waiters may wait for changed without a write (a transaction ended)."""
        self._poke_all_later = True

    def wake_waiters(self, now: float) -> None:
        """After a command that wrote: let awaitData cursors see the new entries."""
        if self._poke_all_later:
            self._poke_all_later = False
            self._poke_all(now)

    def write_datetime(self) -> Any:
        return wall_datetime(self._write_wall)

    def collection(self, database: str, name: str, *, create: bool = False) -> Collection | None:
        collections = self.databases.get(database, {})
        found = collections.get(name)
        if found is None and create:
            found = self._new_collection(database, name)
            self.databases.setdefault(database, {})[name] = found
            self.log("c", "create", f"{database}.$cmd", command={"create": name}, ui=found.uuid)
        return found

    def document_key(self, ns: str, document: dict[str, Any]) -> dict[str, Any]:
        """The ``documentKey`` of a write to ``document`` in ``ns`` (its oplog entry's, its
        change event's): ``{_id}`` here; a shard of a sharded cluster puts the shard key's
        fields first (:mod:`mongo_sansio.testing.sharded`)."""
        return {"_id": document["_id"]}

    def install(self, database: str, name: str) -> Collection:
        """A new empty collection, not logged (a committing transaction logs its creation in
        its own entry)."""
        found = self._new_collection(database, name)
        self.databases.setdefault(database, {})[name] = found
        return found

    def _new_collection(self, database: str, name: str, uuid: Binary | None = None) -> Collection:
        """A collection of this cluster: a new UUID unless ``uuid`` (a renamed one's) is given."""
        ns = f"{database}.{name}"
        ui = uuid if uuid is not None else self.new_collection_uuid()

        def on_write(event: WriteEvent) -> None:
            source = event.after if event.after is not None else event.before
            key = self.document_key(ns, source) if source is not None else None
            op = {"insert": "i", "delete": "d"}.get(event.kind, "u")
            self.log(op, event.kind, ns, document_key=key, before=event.before, after=event.after,
                     images=ns in self.image_namespaces, ui=ui)

        collection = Collection(database, name, id_factory=self.new_object_id, on_write=on_write)
        collection.uuid = ui
        collection.guard = self.transactions.committed_guard(ns)
        return collection

    def adopt(self, collection: Collection) -> None:
        """Install ``collection`` (e.g. renamed) with this cluster's write hook; it keeps its
        UUID (a new one is drawn when it has none)."""
        fresh = self._new_collection(collection.database, collection.name, collection.uuid)
        copy = collection.clone()
        copy.uuid = fresh.uuid
        copy.on_write = fresh.on_write
        copy.guard = fresh.guard
        copy.id_factory = self.new_object_id
        self.databases.setdefault(collection.database, {})[collection.name] = copy
