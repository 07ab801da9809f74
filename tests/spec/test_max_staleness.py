"""The max staleness spec suite (specifications/source/max-staleness/tests).

Each file is one case: a topology description (with lastUpdateTime and lastWriteDate), an
optional heartbeatFrequencyMS and a read preference.  ``error: true`` cases must raise
:class:`ConfigurationError` (from the read preference itself, or from selection's check of
maxStalenessSeconds against the heartbeat frequency); the others compare ``suitable_servers``
and ``in_latency_window`` by address.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from _selection_data import addresses, criteria, settings, topology
from _specs import suite_cases

from mongo_sansio.bson import extjson
from mongo_sansio.errors import ConfigurationError
from mongo_sansio.selection import in_latency_window, select_server, suitable_servers

SUITE = "max-staleness/tests"


def _expand(path: Path, data: Any) -> Iterable[tuple[str, Any]]:
    yield data.get("description", path.stem), extjson.loads(json.dumps(data))


@pytest.mark.spec
@pytest.mark.parametrize("case", suite_cases(SUITE, _expand))
def test_max_staleness_suite(case: dict[str, Any]) -> None:
    description = topology(case["topology_description"])
    options = settings(case, description)
    if case.get("error"):
        with pytest.raises(ConfigurationError, match="maxStalenessSeconds"):
            suitable_servers(description, criteria(case), options.heartbeat_frequency)
        return
    wanted = criteria(case)
    suitable = suitable_servers(description, wanted, options.heartbeat_frequency)
    assert {sd.address for sd in suitable} == addresses(case["suitable_servers"])
    window = in_latency_window(suitable, options.local_threshold)
    expected_window = addresses(case["in_latency_window"])
    assert {sd.address for sd in window} == expected_window
    chosen = select_server(
        description,
        wanted,
        heartbeat_frequency=options.heartbeat_frequency,
        local_threshold=options.local_threshold,
        draw=random.Random(7).randrange,
    )
    if expected_window:
        assert chosen is not None and chosen.address in expected_window
    else:
        assert chosen is None
