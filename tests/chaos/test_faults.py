"""The replication faults of the simulation (docs/chaos.md): rollback, member partitions,
clock jumps, oplog truncation.  Each happens in a scripted world where the invariants hold,
and each invariant it touches has teeth: a simulator made to break it (acknowledging
``w:majority`` early, streaming uncommitted events, a wall-clock oplog, a resume that skips
lost history) is caught."""

from __future__ import annotations

from typing import Any

import pytest

from mongo_sansio.adapters.chaos import Fault, run_world, shrink
from mongo_sansio.adapters.chaos.workloads import setup
from mongo_sansio.adapters.chaos.world import World
from mongo_sansio.adapters.cli import main
from mongo_sansio.bson import Timestamp
from mongo_sansio.ops.write_concern import WriteConcern
from mongo_sansio.selection import ReadPreference
from mongo_sansio.testing.server import dispatch, oplog, replication

N0, N1, N2 = "n0.sim:27017", "n1.sim:27017", "n2.sim:27017"
STEPS = 8


def _run(seed: int, workload: str, *schedule: Fault, steps: int = 12) -> tuple[World, Any]:
    world = World(seed, steps=steps, workload=workload, schedule=schedule)
    return world, world.run()


def _lost_w1_inserts(world: World) -> list[str]:
    kept = {doc["_id"] for doc in world.cluster.databases["chaos"]["writes"].find({})}
    return [key for kind, key, w, ok in world.writes if kind == "insert" and ok and w == "1" and key not in kept]


@pytest.mark.parametrize(("seed", "how"), [(0, "isolate"), (27, "crash")])
def test_a_rollback_loses_acknowledged_w1_writes_and_no_majority_one(seed: int, how: str) -> None:
    """The primary, cut off from the others (or crashed, its secondaries lagging), keeps
    acknowledging w:1 writes nobody else has; past the election timeout a majority elects a
    new primary and they are rolled back.  The invariants hold: w:1 writes may be lost,
    w:majority ones are not, a retried write is applied at most once."""
    world, outcome = _run(seed, "retryable-writes", Fault(2.0, "rollback", "", 5.0, how))
    assert outcome.ok, outcome.line()
    assert world.cluster.replication.rollbacks
    assert _lost_w1_inserts(world)
    assert world.cluster.primary != N0


def test_a_server_acknowledging_majority_early_is_caught_by_a_rollback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dispatch, "wait_for_write_concern", lambda ctx, reply: reply)
    found = [run_world(seed, steps=STEPS, workload="retryable-writes", kinds=("rollback",)) for seed in range(6)]
    broken = [o for o in found if not o.ok]
    assert broken and "acknowledged w:majority" in (broken[0].violation or "")


def test_change_streams_never_deliver_what_a_rollback_takes_back() -> None:
    world, outcome = _run(5, "change-streams", Fault(1.5, "rollback", "", 5.0, "isolate"))
    assert outcome.ok, outcome.line()
    assert world.cluster.replication.rollbacks and world.feed_seen


def test_a_stream_of_uncommitted_events_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Change streams that read past the majority commit point deliver events a rollback then
    takes back (the consumer sees an insert twice, or one never committed)."""
    monkeypatch.setattr(replication.Replication, "commit_point", property(lambda self: self.end))
    found = [run_world(seed, steps=STEPS, workload="change-streams", kinds=("rollback",)) for seed in range(8)]
    assert any(not o.ok and "change stream" in (o.violation or "") for o in found), [o.line() for o in found]


def test_an_isolated_primary_is_replaced_after_the_election_timeout() -> None:
    world, outcome = _run(3, "mixed", Fault(1.0, "isolate", N0, 4.0), steps=STEPS)
    assert outcome.ok, outcome.line()
    assert world.cluster.primary == N1 and world.cluster.term >= 2


def test_an_isolated_secondary_changes_no_primary() -> None:
    world, outcome = _run(3, "mixed", Fault(1.0, "isolate", N2, 4.0), steps=STEPS)
    assert outcome.ok, outcome.line()
    assert world.cluster.primary == N0 and world.cluster.term == 1


def test_a_clock_jump_moves_wall_times_not_cluster_times() -> None:
    world, outcome = _run(2, "mixed", Fault(0.5, "clock", N0, 6.0, "-3600s"), steps=STEPS)
    assert outcome.ok, outcome.line()
    walls = [entry.wall for entry in world.cluster.oplog.entries]
    assert any(later < earlier - 3000 for earlier, later in zip(walls, walls[1:], strict=False))


def test_an_oplog_clock_that_follows_the_wall_clock_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def wall_clock(self: oplog.Oplog, wall: float) -> Timestamp:
        self._last = Timestamp(int(wall), 1 if int(wall) != self._last.time else self._last.inc + 1)
        return self._last

    monkeypatch.setattr(oplog.Oplog, "next_timestamp", wall_clock)
    world, outcome = _run(2, "retryable-writes", Fault(0.5, "clock", N0, 6.0, "-3600s"), steps=STEPS)
    assert not outcome.ok and outcome.violation == "the oplog's timestamps went back"


def test_truncated_history_makes_a_behind_consumer_say_it_cannot_resume() -> None:
    world = World(1, workload="change-streams", kinds=("truncate",))
    outcome = world.run()
    assert outcome.ok, outcome.line()
    assert world.feed_cannot_resume is not None and "286" in world.feed_cannot_resume


def test_a_resume_that_skips_lost_history_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server (or client) that resumes past lost history without a word is a consumer that
    skips silently: the invariant catches it."""
    monkeypatch.setattr(oplog.Oplog, "first_timestamp", property(lambda self: None))
    outcome = run_world(34, steps=STEPS, workload="mixed", kinds=("truncate",))
    # (the mixed world's change-stream consumer or its Spark query, whichever is checked first)
    skipped = ("change stream consumer never saw", "Spark query never delivered")
    assert not outcome.ok and any(s in (outcome.violation or "") for s in skipped), outcome.line()


def test_the_command_takes_the_new_kinds_by_their_names(capsys: pytest.CaptureFixture[str]) -> None:
    lines = []
    for faults in ("isolate,rollback,clock,truncate", "truncation,clock-jumps,rollbacks,member-partitions"):
        assert main(["chaos", "--seed", "3", "--steps", "4", "--faults", faults]) == 0
        lines.append(capsys.readouterr().out)
    assert lines[0] == lines[1] and lines[0].startswith("seed 3: ok, trace ")


async def _read_your_write(world: World, causal: bool) -> bool:
    """A w:1 insert, then a secondary read in the same session: whether it saw the write."""
    session = world.client.start_session(causal_consistency=causal)
    try:
        db = world.client.chaos
        writes = db.get_collection("writes", write_concern=WriteConcern(w=1))
        await writes.insert_one({"_id": "mine"}, session=session)
        reads = db.get_collection("writes", read_preference=ReadPreference.SECONDARY)
        return await reads.find_one({"_id": "mine"}, session=session) is not None
    finally:
        await session.end_session()


@pytest.mark.parametrize("causal", [True, False])
def test_lagging_secondaries_make_causal_consistency_observable(causal: bool) -> None:
    """With lagging secondaries a secondary read may miss the session's own w:1 write; a
    causally consistent session waits for it (afterClusterTime), a session without it does
    not: the simulator can tell a client that forgets afterClusterTime."""
    world = World(0, workload="cursors", kinds=())
    for member in (N1, N2):
        world.cluster.set_lag(member, 1.5)
    assert world._run(setup(world), "setup", 120.0).error is None
    task = world._run(_read_your_write(world, causal), "read your write", 60.0)
    assert task.error is None and task.result is causal


def test_a_client_that_downgrades_majority_to_w1_is_caught_by_a_rollback(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client bug no fault could show before the simulator learnt rollback: it sends
    ``w: 1`` where the application asked for a majority.  The sweep's first seed finds it, and
    the shrunk schedule keeps a fault that rolls writes back."""
    to_document = WriteConcern.to_document

    def downgraded(self: WriteConcern) -> dict[str, Any]:
        document = to_document(self)
        if document.get("w") == "majority":
            document["w"] = 1
        return document

    monkeypatch.setattr(WriteConcern, "to_document", downgraded)
    broken = run_world(0, steps=STEPS, workload="retryable-writes")
    assert not broken.ok and "acknowledged w:majority" in (broken.violation or "")
    shrunk = shrink(broken, steps=STEPS, workload="retryable-writes")
    assert not shrunk.ok and {f.kind for f in shrunk.schedule} & {"rollback", "isolate", "crash"}
    assert run_world(0, steps=STEPS, workload="retryable-writes", schedule=shrunk.schedule).line() == shrunk.line()
