"""The atheris entry point the fuzz targets share.

Each target module states its invariant as ``check_one(data: bytes)`` and ends with::

    if __name__ == "__main__":
        from _runner import fuzz  # this folder is sys.path[0] when a target runs as a script

        fuzz(check_one)

so ``python fuzz/<target>.py CORPUS_DIR -max_total_time=3600`` runs a campaign with libFuzzer's
options from the command line (docs/fuzzing.md).  atheris is needed for campaigns only: CI runs
each ``check_one`` under hypothesis (tests/unit/test_fuzz_*.py), which loads the targets by path
without importing this module.
"""

from __future__ import annotations

import sys
from collections.abc import Callable


def fuzz(check_one: Callable[[bytes], None]) -> None:
    """Instrument the loaded code and run atheris over ``check_one`` with ``sys.argv``."""
    import atheris  # type: ignore[import-untyped,unused-ignore]

    atheris.instrument_all()
    atheris.Setup(sys.argv, check_one)
    atheris.Fuzz()
