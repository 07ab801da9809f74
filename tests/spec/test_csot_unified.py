"""The client-side operations timeout (CSOT) unified tests (``client-side-operations-timeout/tests``) against the simulated
replica set, one case per test (``file: description``), with the client chosen by
``$MONGO_SANSIO_UNIFIED_DRIVER`` (ours by default, ``pymongo`` to validate the runner and the
simulator).  The runner is the :mod:`unified` package; every skip names its reason, and known
gaps are reason-named xfails in :mod:`unified.known_gaps`.
"""

from __future__ import annotations

from typing import Any

import pytest
from unified import DeploymentPool, run_case, selected_driver, unified_cases

SUITE = "client-side-operations-timeout/tests"
DRIVER = selected_driver()  # the conftest's deployments fixture reads it
pytestmark = pytest.mark.usefixtures("watchdog")
CASES = unified_cases(SUITE, DRIVER)
#: a retry after a state-change error waits for the monitor's next check: 0.5 s, not 10 s
CLIENT_DEFAULTS = {"heartbeatFrequencyMS": 500}


@pytest.mark.spec
@pytest.mark.parametrize("case", CASES)
def test_csot_unified(case: Any, deployments: DeploymentPool) -> None:
    # Cases budget the client 40-100 ms between blocked commands; under a loaded CI machine one
    # run in a few hundred overruns that (e.g. "Non-tailable cursor lifetime remaining timeoutMS
    # applied to getMore": a find blocked 60 ms of a 100 ms timeout, then the getMore must
    # leave within 40 ms), so a failed expectation runs again once.
    run_case(case, deployments, DRIVER, client_defaults=CLIENT_DEFAULTS, attempts=2)
