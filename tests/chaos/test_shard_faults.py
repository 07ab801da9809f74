"""Faults inside the sharded world's shards (docs/chaos.md): a shard member crashes and
restarts (``shard-crash``); a shard's primary is cut off from its shard and what only it had
is rolled back (``shard-isolate``).  Each happens in a scripted sharded world where the invariants
hold, a short sweep draws it, and the replica-set worlds' draws do not change."""

from __future__ import annotations

from typing import Any

import pytest

from mongo_sansio.adapters.chaos import KINDS, Fault, run_world
from mongo_sansio.adapters.chaos.faults import SHARD_KINDS
from mongo_sansio.adapters.chaos.world import World
from mongo_sansio.adapters.cli import main
from mongo_sansio.testing.server.replset import STOPPED
from mongo_sansio.testing.sharded import transactions

S0A, S0B, S0C = "s0a.sim:27018", "s0b.sim:27018", "s0c.sim:27018"
S1A = "s1a.sim:27018"
STEPS = 8


def _sharded(seed: int, workload: str, *schedule: Fault) -> World:
    world = World(seed, steps=STEPS, workload=workload, deployment="sharded", schedule=schedule)
    outcome = world.run()
    assert outcome.ok, outcome.line()
    return world


@pytest.mark.parametrize("workload", ["transactions", "retryable-writes", "mixed"])
def test_a_crashed_shard_primary_is_replaced_and_the_invariants_hold(workload: str) -> None:
    """Both shards' primaries stop mid-workload: each shard elects its next member, the
    routers write there; transfers stay all or nothing and retried writes are applied once."""
    world = _sharded(1, workload, Fault(1.0, "shard-crash", S0A, 3.0), Fault(1.5, "shard-crash", S1A, 3.0))
    shards = world.cluster.cluster.shards
    assert (shards["shard0"].primary, shards["shard1"].primary) == ("s0b.sim:27018", "s1b.sim:27018")
    assert shards["shard0"].term == shards["shard1"].term == 2
    assert shards["shard0"].members[S0A].state != STOPPED  # (restarted, a secondary)
    assert world.writes or world.transfers


def test_a_shard_without_a_majority_has_no_primary_until_a_member_restarts() -> None:
    """Two of shard0's three members stop: it has no primary, the routers' commands to it
    fail (as mongos answers, FailedToSatisfyReadPreference); the other shard goes on, and when
    a member restarts shard0 elects one again."""
    world = World(1, steps=STEPS, workload="mixed", deployment="sharded",
                  schedule=[Fault(1.0, "shard-crash", S0A, 4.0), Fault(1.2, "shard-crash", S0B, 4.0)])
    shard0 = world.cluster.cluster.shards["shard0"]
    outcome = world.run()
    assert outcome.ok, outcome.line()
    assert shard0.primary is not None and shard0.term >= 3
    assert any(not ok for *_, ok in world.writes) or False in world.transfers


def test_a_cut_off_shard_primary_is_replaced_and_its_w1_writes_roll_back() -> None:
    """shard0's primary is cut off from its shard past the election timeout: the others elect
    s0b, the old primary's w:1 writes (acknowledged, reaching nobody) are rolled back; no
    w:majority write is lost, no retried write applied twice, no transfer half applied."""
    world = _sharded(1, "mixed", Fault(1.0, "shard-isolate", S0C, 4.0))
    shard0 = world.cluster.cluster.shards["shard0"]
    assert shard0.primary == S0B and shard0.term == 2
    assert shard0.replication.rollbacks and world._rolled_back_writes()
    kept = {doc["_id"] for doc in world.cluster.databases["chaos"]["writes"].find({})}
    lost = [key for kind, key, w, ok in world.writes if kind == "insert" and ok and key not in kept]
    assert lost and all(w == "1" for kind, key, w, ok in world.writes if key in lost)


def test_a_two_shard_commit_on_a_cut_off_primary_is_caught_without_the_prepare(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Teeth: a router that commits a two-shard transaction on a primary that cannot reach its
    shard's majority (no w:majority prepare) leaves a part a rollback then undoes."""
    monkeypatch.setattr(transactions, "_can_prepare", lambda shard: True)
    world = World(0, steps=STEPS, workload="transactions", deployment="sharded",
                  schedule=[Fault(1.0, "shard-isolate", S0C, 4.0)])
    outcome = world.run()
    assert not outcome.ok and "half-applied" in (outcome.violation or ""), outcome.line()


def test_a_short_sweep_of_shard_faults_passes() -> None:
    outcomes = [run_world(seed, steps=6, workload="mixed", kinds=SHARD_KINDS, deployment="sharded")
                for seed in range(300, 312)]
    assert [o.line() for o in outcomes if not o.ok] == []


def _schedule(seed: int, **options: Any) -> tuple[Fault, ...]:
    """The faults ``seed`` draws (the world is built, not run)."""
    world = World(seed, **options)
    world.discard()
    return world.schedule


def test_shard_faults_are_drawn_only_in_the_sharded_world() -> None:
    without = tuple(kind for kind in KINDS if kind not in SHARD_KINDS)
    for seed in range(40):
        assert _schedule(seed) == _schedule(seed, kinds=without)
        assert all(f.kind not in SHARD_KINDS for f in _schedule(seed))
    drawn = [f for seed in range(40) for f in _schedule(seed, deployment="sharded") if f.kind in SHARD_KINDS]
    assert drawn and {f.target[:2] for f in drawn} == {"s0", "s1"}


def test_a_sharded_seed_keeps_its_router_faults() -> None:
    """The shard faults come from their own stream: a sharded seed's router faults are those
    it drew before they existed."""
    for seed in range(20):
        every = _schedule(seed, deployment="sharded")
        routers = _schedule(seed, deployment="sharded", kinds=[k for k in KINDS if k not in SHARD_KINDS])
        assert tuple(f for f in every if f.kind not in SHARD_KINDS) == routers


def test_the_command_draws_shard_crashes(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["chaos", "--seed", "7", "--steps", "4", "--faults", "shard-crash", "--world", "sharded"]
    assert main(argv) == 0
    assert capsys.readouterr().out.strip() == run_world(7, steps=4, kinds=("shard-crash",), deployment="sharded").line()
