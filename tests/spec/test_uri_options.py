"""The URI Options spec tests: every file of ``uri-options/tests``.

Same format as the Connection String suite (see ``test_connection_string.py``): invalid cases
must raise ConfigurationError, valid ones warn exactly when expected and carry the listed
options (keys compared case-insensitively).  Credentials are checked too, as a client
constructor would.  Every option the suite covers is implemented, the optional ones included,
so nothing is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from _specs import suite_cases
from test_connection_string import run_case

SUITE = "uri-options"


def _expand(path: Path, data: Any) -> Iterable[tuple[str, Any]]:
    for case in data["tests"]:
        yield case["description"], case


CASES = suite_cases(SUITE, _expand)


@pytest.mark.spec
@pytest.mark.parametrize("case", CASES)
def test_uri_options(case: dict[str, Any]) -> None:
    run_case(case, check_credential=True)
