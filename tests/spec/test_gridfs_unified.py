"""The GridFS unified tests (``gridfs/tests``) against the simulated replica set, one case per
test (``file: description``), with the client chosen by ``$MONGO_SANSIO_UNIFIED_DRIVER`` (ours by
default, ``pymongo`` to validate the runner and the simulator).  The runner is the
:mod:`unified` package (bucket operations: :mod:`unified.gridfs_ops`); every skip names its
reason, and known gaps are reason-named xfails in :mod:`unified.known_gaps`.
"""

from __future__ import annotations

from typing import Any

import pytest
from unified import DeploymentPool, run_case, selected_driver, unified_cases

SUITE = "gridfs/tests"
DRIVER = selected_driver()  # the conftest's deployments fixture reads it
pytestmark = pytest.mark.usefixtures("watchdog")
CASES = unified_cases(SUITE, DRIVER)


@pytest.mark.spec
@pytest.mark.parametrize("case", CASES)
def test_gridfs_unified(case: Any, deployments: DeploymentPool) -> None:
    run_case(case, deployments, DRIVER)
