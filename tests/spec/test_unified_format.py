"""The unified test format's own tests (``unified-test-format/tests``) run through the
:mod:`unified` runner against the simulated deployment: every ``valid-pass`` test must pass and
every ``valid-fail`` test must fail (an assertion or an error), which checks the runner itself.
The ``invalid`` files test schema validation, which this runner does not do.  The client is
chosen by ``$MONGO_SANSIO_UNIFIED_DRIVER`` (ours by default, ``pymongo`` to validate).
"""

from __future__ import annotations

import faulthandler
from collections.abc import Iterator
from typing import Any

import pytest
from unified import DeploymentPool, run_case, selected_driver, unified_cases

HARD_TIMEOUT_SECONDS = 60.0
DRIVER = selected_driver()
PASS_CASES = unified_cases("unified-test-format/tests/valid-pass", DRIVER)
FAIL_CASES = unified_cases("unified-test-format/tests/valid-fail", DRIVER)


@pytest.fixture(scope="module")
def deployments() -> Iterator[DeploymentPool]:
    with DeploymentPool(DRIVER) as pool:
        yield pool


@pytest.fixture(autouse=True)
def watchdog() -> Iterator[None]:
    """A test that hangs must not stall the run."""
    faulthandler.dump_traceback_later(HARD_TIMEOUT_SECONDS, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.mark.spec
@pytest.mark.parametrize("case", PASS_CASES)
def test_valid_pass(case: Any, deployments: DeploymentPool) -> None:
    run_case(case, deployments, DRIVER)


@pytest.mark.spec
@pytest.mark.parametrize("case", FAIL_CASES)
def test_valid_fail(case: Any, deployments: DeploymentPool) -> None:
    run_case(case, deployments, DRIVER, expect_failure=True)
