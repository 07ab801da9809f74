"""The change streams unified tests (``change-streams/tests/unified``) against the simulated
replica set, one case per test (``file: description``), with the client chosen by
``$MONGO_SANSIO_UNIFIED_DRIVER`` (ours by default, ``pymongo`` to validate the runner and the
simulator).  The runner is the :mod:`unified` package; every skip names its reason.
"""

from __future__ import annotations

from typing import Any

import pytest
from unified import DeploymentPool, run_case, selected_driver, unified_cases

SUITE = "change-streams/tests/unified"
DRIVER = selected_driver()  # the conftest's deployments fixture reads it
pytestmark = pytest.mark.usefixtures("watchdog")
CASES = unified_cases(SUITE, DRIVER)


#: a resume after a state-change error waits for the monitor's next check: 0.5 s, not 10 s
#: (an injected ShutdownInProgress/InterruptedAtShutdown carries no topologyVersion, so the
#: client marks the server Unknown; at the default 10 s heartbeat the resume's selection took
#: 10.08 s against the runner's 10 s serverSelectionTimeoutMS)
CLIENT_DEFAULTS = {"heartbeatFrequencyMS": 500}


@pytest.mark.spec
@pytest.mark.parametrize("case", CASES)
def test_change_streams_unified(case: Any, deployments: DeploymentPool) -> None:
    run_case(case, deployments, DRIVER, client_defaults=CLIENT_DEFAULTS)
