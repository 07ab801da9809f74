"""The change streams unified tests, run with the blocking client against the simulated
replica set (one per module).

Every test of every file under ``change-streams/tests/unified`` is its own case, named
``file: description``.  The interpreter is :mod:`_unified` (the subset of the unified test format
these files use).  A test whose requirements the simulator does not meet (server version, a
sharded cluster, ...) or that needs something the runner or the simulator does not implement
is skipped, and the skip names the reason.  Between tests the databases a test used are
dropped and the failpoints it set are turned off.
"""

from __future__ import annotations

import faulthandler
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _specs import suite_cases
from _unified import (
    CLIENT_OPTIONS,
    TestRunner,
    load_file,
    requirements_skip_reason,
    unsupported_reason,
)

if TYPE_CHECKING:
    from adapters.blocking import MongoClient
    from adapters.sim import SimulatedReplicaSet
else:
    from mongo_sansio.adapters.blocking import MongoClient
    from mongo_sansio.adapters.sim import SimulatedReplicaSet

SUITE = "change-streams/tests/unified"
HARD_TIMEOUT_SECONDS = 45.0
# Known gaps of the client or the simulator, by "file: description": the reason names the gap.
KNOWN_GAPS: dict[str, str] = {
    "change-streams-showExpandedEvents: when showExpandedEvents is true, new fields on change"
    " stream events are handled appropriately": (
        "simulator gap: its collections have no UUIDs, so expanded events lack collectionUUID"
    ),
}


def _expand(path: Path, _parsed: Any) -> Iterable[tuple[str, Any]]:
    file = load_file(path)
    for test in file["tests"]:
        yield test["description"], (path.stem, file, test)


CASES = suite_cases(SUITE, _expand)


@pytest.fixture(scope="module")
def replica_set() -> Iterator[tuple[SimulatedReplicaSet, str]]:
    """The deployment and the server version it reports (buildInfo)."""
    with SimulatedReplicaSet(members=3) as rs:
        client = MongoClient(rs.uri, **CLIENT_OPTIONS)
        try:
            version = str(client.admin.command("buildInfo")["version"])
        finally:
            client.close()
        yield rs, version


@pytest.fixture(autouse=True)
def watchdog() -> Iterator[None]:
    """A change stream waiting for an event that never comes must not stall the run."""
    faulthandler.dump_traceback_later(HARD_TIMEOUT_SECONDS, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.mark.spec
@pytest.mark.parametrize("case", CASES)
def test_change_streams_unified(
    case: tuple[str, Any, Any], replica_set: tuple[SimulatedReplicaSet, str]
) -> None:
    stem, file, test = case
    rs, version = replica_set
    reason = (
        KNOWN_GAPS.get(f"{stem}: {test['description']}")
        or requirements_skip_reason(file.get("runOnRequirements"), version)
        or requirements_skip_reason(test.get("runOnRequirements"), version)
        or unsupported_reason(test)
    )
    if reason:
        pytest.skip(reason)
    TestRunner(rs, file, test).run()
