"""Test-wide settings.

CI sets ``MONGO_SANSIO_CI=1`` (``.ci/run``): hypothesis then derandomizes, so that a landing is
judged on the same examples every run. Exploration happens everywhere else -- local runs draw
fresh examples each time, and the fuzz targets (``fuzz/``, ``docs/fuzzing.md``) run for hours --
and what they find becomes an explicit regression test.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("MONGO_SANSIO_CI"):
    settings.load_profile("ci")
