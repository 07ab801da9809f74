"""The auth spec's unified tests (``auth/tests/unified``: MONGODB-OIDC with retries off) against
the simulated replica set, whose auth-enabled deployments also trust an OIDC issuer: the
files' ``$$placeholder`` mechanism properties become ``ENVIRONMENT: test`` with
``$OIDC_TOKEN_FILE`` holding a token the simulator accepts (:mod:`unified.suite`).  The client
is ``$MONGO_SANSIO_UNIFIED_DRIVER``'s (ours by default, ``pymongo`` to check the simulator);
the other runtimes run them in ``test_unified_runtimes.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from unified import DeploymentPool, run_case, selected_driver, unified_cases

SUITE = "auth/tests/unified"
DRIVER = selected_driver()
pytestmark = pytest.mark.usefixtures("watchdog")
CASES = unified_cases(SUITE, DRIVER)


@pytest.mark.spec
@pytest.mark.parametrize("case", CASES)
def test_auth_unified(case: Any, deployments: DeploymentPool) -> None:
    run_case(case, deployments, DRIVER)
