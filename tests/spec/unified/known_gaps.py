"""Known gaps of OUR client, by reason: the one switch for expected failures.

Each entry maps a reason (what the client lacks, and the issue that adds it) to a predicate on
``(file, test)``.  With the default driver (ours), a test a predicate selects is marked
``xfail(strict=False)`` with that reason: it still runs, and an unexpected pass shows as
XPASS.  Delete an entry when the client gains the feature.  Nothing here applies when
``$MONGO_SANSIO_UNIFIED_DRIVER=pymongo``.  No entry names files or tests: predicates look at
what a test needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .events import CMAP_EVENTS, SDAM_EVENTS

__all__ = ["OUR_CLIENT_GAPS", "SIMULATOR_GAPS", "gap_reasons"]

Predicate = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]


def _names(value: Any) -> Iterator[str]:
    """Every key and string anywhere in ``value``."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            yield str(key)
            yield from _names(inner)
    elif isinstance(value, (list, tuple)):
        for inner in value:
            yield from _names(inner)
    elif isinstance(value, str):
        yield value


def _mentions(words: frozenset[str]) -> Predicate:
    def predicate(file: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
        scope = (file.get("createEntities", []), test)
        return any(name in words for name in _names(scope))

    return predicate


OUR_CLIENT_GAPS: dict[str, Predicate] = {
    "needs CMAP events (pool/connection listeners) from the client -- the new client core":
        _mentions(frozenset(CMAP_EVENTS) | {"assertNumberConnectionsCheckedOut"}),
    "needs SDAM events and background monitoring from the client -- the new client core":
        _mentions(frozenset(SDAM_EVENTS) | {"recordTopologyDescription", "waitForPrimaryChange"}),
    "needs structured log messages (mongo_sansio.command/topology/serverSelection/connection loggers)":
        _mentions(frozenset({"observeLogMessages", "expectLogMessages"})),
}


#: Gaps of the simulator, whichever client runs (reported to the simulator's owner).
SIMULATOR_GAPS: dict[str, Predicate] = {
    "simulator gap: its collections have no UUIDs (change events lack collectionUUID)":
        _mentions(frozenset({"collectionUUID"})),
}


def gap_reasons(
    file: Mapping[str, Any], test: Mapping[str, Any], *, our_client: bool
) -> list[str]:
    """The reasons of every gap that applies to ``test`` (ours only with ``our_client``)."""
    gaps = dict(SIMULATOR_GAPS)
    if our_client:
        gaps.update(OUR_CLIENT_GAPS)
    return [reason for reason, applies in gaps.items() if applies(file, test)]
