"""Deterministic simulation: the real client and a simulated replica set in virtual time.

The client's interpreter, engine, flows and async API run unchanged on a virtual runtime
(:mod:`.runtime`): an in-memory network (:mod:`.network`) and a virtual clock driven by a
seeded scheduler (:mod:`.loop`), in one thread.  The server side is the simulator's pure
replica set, or its sharded cluster (:mod:`.sharded`, ``--world sharded``).  A seed chooses the faults (:mod:`.faults`) and the interleavings; workloads
(:mod:`.workloads`) record what the client saw and :mod:`.world` checks the invariants and
shrinks a breaking fault schedule.  ``mongo-sansio chaos`` (:mod:`.cli`) runs it;
docs/chaos.md describes it.
"""

from __future__ import annotations

from .faults import KINDS, Fault
from .workloads import WORKLOADS
from .world import DEPLOYMENTS, Outcome, World, run_world, shrink

__all__ = ["DEPLOYMENTS", "Fault", "KINDS", "Outcome", "WORKLOADS", "World", "run_world", "shrink"]
