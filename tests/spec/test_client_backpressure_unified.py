"""The client backpressure unified tests (``client-backpressure/tests``) against the simulated
replica set, one case per test (``file: description``), with the client chosen by
``$MONGO_SANSIO_UNIFIED_DRIVER``.  The runner is the :mod:`unified` package; every skip names
its reason, and known gaps are reason-named xfails in :mod:`unified.known_gaps`.
"""

from __future__ import annotations

from typing import Any

import pytest
from unified import DeploymentPool, run_case, selected_driver, unified_cases

SUITE = "client-backpressure/tests"
DRIVER = selected_driver()  # the conftest's deployments fixture reads it
pytestmark = pytest.mark.usefixtures("watchdog")
CASES = unified_cases(SUITE, DRIVER)
#: a retry after a state-change error waits for the monitor's next check: 0.5 s, not 10 s
CLIENT_DEFAULTS = {"heartbeatFrequencyMS": 500}


@pytest.mark.spec
@pytest.mark.parametrize("case", CASES)
def test_client_backpressure_unified(case: Any, deployments: DeploymentPool) -> None:
    run_case(case, deployments, DRIVER, client_defaults=CLIENT_DEFAULTS)
