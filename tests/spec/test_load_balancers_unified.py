"""The load balancer spec's unified tests (``load-balancers/tests``) against the simulator's
load balancer front (``SimulatedReplicaSet(load_balanced=True)``), one case per test
(``file: description``), with the client chosen by ``$MONGO_SANSIO_UNIFIED_DRIVER`` (ours by
default, ``pymongo`` to validate the runner and the simulator).  The runner is the
:mod:`unified` package; every skip names its reason, and our client's known gaps are
reason-named xfails in :mod:`unified.known_gaps`.
"""

from __future__ import annotations

from typing import Any

import pytest
from unified import DeploymentPool, run_case, selected_driver, unified_cases

SUITES = ("load-balancers/tests",)
DRIVER = selected_driver()  # the conftest's deployments fixture reads it
pytestmark = pytest.mark.usefixtures("watchdog")
CASES = [case for suite in SUITES for case in unified_cases(suite, DRIVER)]


@pytest.mark.spec
@pytest.mark.parametrize("case", CASES)
def test_load_balancers_unified(case: Any, deployments: DeploymentPool) -> None:
    run_case(case, deployments, DRIVER)
