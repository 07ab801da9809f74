"""Finding the MongoDB specification test data (never copied into this repository).

Runners call :func:`suite_cases` with their suite's folder name.  The data lives in
``$MONGO_SANSIO_SPECS`` (default: ``../shared/specs`` beside the checkout).  When the folder is
absent a runner gets one skipped case whose reason says which folder is missing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SPECS_ENV = "MONGO_SANSIO_SPECS"


def specs_root() -> Path:
    configured = os.environ.get(SPECS_ENV)
    return Path(configured) if configured else REPO_ROOT.parent / "shared" / "specs"


def suite_dir(suite: str) -> Path:
    return specs_root() / suite


def suite_files(suite: str, pattern: str = "*.json") -> list[Path]:
    """Every file of the suite below its folder, in a stable order."""
    return sorted(suite_dir(suite).rglob(pattern))


def missing_reason(suite: str) -> str:
    return f"spec suite {suite!r} not found at {suite_dir(suite)} (set {SPECS_ENV})"


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def suite_cases(
    suite: str,
    expand: Callable[[Path, Any], Iterable[tuple[str, Any]]],
    pattern: str = "*.json",
) -> list[Any]:
    """pytest params for every case of every file of ``suite``.

    ``expand(path, parsed_file)`` yields ``(case id, case data)`` pairs; ids are prefixed with
    the file's path relative to the suite folder.
    """
    folder = suite_dir(suite)
    if not folder.is_dir():
        return [pytest.param(None, id=f"{suite}-missing", marks=pytest.mark.skip(reason=missing_reason(suite)))]
    params = []
    for path in suite_files(suite, pattern):
        rel = path.relative_to(folder).with_suffix("").as_posix()
        for case_id, case in expand(path, load_json(path)):
            params.append(pytest.param(case, id=f"{rel}: {case_id}"))
    if not params:
        return [pytest.param(None, id=f"{suite}-empty", marks=pytest.mark.skip(reason=f"no cases found in {folder}"))]
    return params
