"""The unified test format's own tests (``unified-test-format/tests``) run through the
:mod:`unified` runner against the simulated deployment: every ``valid-pass`` test must pass and
every ``valid-fail`` test must fail (an assertion or an error), which checks the runner itself.
The ``invalid`` files test schema validation, which this runner does not do.  The client is
chosen by ``$MONGO_SANSIO_UNIFIED_DRIVER`` (ours by default, ``pymongo`` to validate).
"""

from __future__ import annotations

from typing import Any

import pytest
from unified import DeploymentPool, run_case, selected_driver, unified_cases

DRIVER = selected_driver()  # the conftest's deployments fixture reads it
pytestmark = pytest.mark.usefixtures("watchdog")
PASS_CASES = unified_cases("unified-test-format/tests/valid-pass", DRIVER)
FAIL_CASES = unified_cases("unified-test-format/tests/valid-fail", DRIVER)


#: a retry after a state-change error waits for the monitor's next check: 0.5 s, not 10 s.
#: (An injected shutdown error carries no topologyVersion, as mongod's does not, so the client
#: marks the server Unknown; with the default 10 s heartbeat the retry's selection raced the
#: 10 s serverSelectionTimeoutMS: poc-retryable-reads "Aggregate succeeds after
#: InterruptedAtShutdown" failed once under CI load.)
CLIENT_DEFAULTS = {"heartbeatFrequencyMS": 500}


@pytest.mark.spec
@pytest.mark.parametrize("case", PASS_CASES)
def test_valid_pass(case: Any, deployments: DeploymentPool) -> None:
    run_case(case, deployments, DRIVER, client_defaults=CLIENT_DEFAULTS)


@pytest.mark.spec
@pytest.mark.parametrize("case", FAIL_CASES)
def test_valid_fail(case: Any, deployments: DeploymentPool) -> None:
    run_case(case, deployments, DRIVER, expect_failure=True, client_defaults=CLIENT_DEFAULTS)
