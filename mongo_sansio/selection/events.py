"""Server selection events: what the logging spec's "serverSelection" messages report
(server-selection.md, "Logging").

Frozen, keyword-only records.  The client core emits them around one selection, in order:
:class:`ServerSelectionStarted`; at most one :class:`ServerSelectionWaiting` (the first time no
suitable server is found; the spec logs it once per operation); then
:class:`ServerSelectionSucceeded` or :class:`ServerSelectionFailed`.  Adapters turn them into
log messages (``mongo_sansio.client.log_messages``); there is no listener API for them.

``selector`` is a string (:func:`describe_selector` writes one from the criteria);
``topology_description`` is the description at the time of the event, or already a string
(:func:`mongo_sansio.selection.loop.describe_topology` writes one); ``operation`` is the command
name the server is selected for; ``remaining_time`` is seconds.

Inputs: what the selecting flow knows.  Outputs: the records.
"""

from __future__ import annotations

import attrs

from mongo_sansio.sdam.description import Address
from mongo_sansio.sdam.topology import TopologyDescription
from mongo_sansio.selection.rules import Operation, SelectionCriteria

__all__ = [
    "SelectionEvent",
    "ServerSelectionStarted",
    "ServerSelectionSucceeded",
    "ServerSelectionFailed",
    "ServerSelectionWaiting",
    "describe_selector",
]


@attrs.frozen(kw_only=True)
class ServerSelectionStarted:
    """Selection began for ``operation``."""

    selector: str
    operation: str
    topology_description: TopologyDescription | str = attrs.field(eq=False)
    operation_id: int | None = None


@attrs.frozen(kw_only=True)
class ServerSelectionSucceeded:
    """Selection chose the server at ``address``."""

    selector: str
    operation: str
    topology_description: TopologyDescription | str = attrs.field(eq=False)
    address: Address
    operation_id: int | None = None


@attrs.frozen(kw_only=True)
class ServerSelectionFailed:
    """Selection failed with ``failure`` (the error the operation raises)."""

    selector: str
    operation: str
    topology_description: TopologyDescription | str = attrs.field(eq=False)
    failure: BaseException = attrs.field(eq=False)
    operation_id: int | None = None


@attrs.frozen(kw_only=True)
class ServerSelectionWaiting:
    """No suitable server yet: selection waits, ``remaining_time`` seconds at most (None when
    selection never times out)."""

    selector: str
    operation: str
    topology_description: TopologyDescription | str = attrs.field(eq=False)
    remaining_time: float | None
    operation_id: int | None = None


SelectionEvent = (
    ServerSelectionStarted
    | ServerSelectionSucceeded
    | ServerSelectionFailed
    | ServerSelectionWaiting
)


def describe_selector(criteria: SelectionCriteria) -> str:
    """The spec's ``selector``: every component of the read preference for a read, "write"
    for a write, and a mark when an application selector also applies."""
    if criteria.operation is Operation.WRITE:
        text = "WriteSelector"
    else:
        text = str(criteria.read_preference)
    if criteria.server_selector is not None:
        text += f" and custom selector {criteria.server_selector!r}"
    if criteria.deprioritized:
        hosts = ", ".join(f"{host}:{port}" for host, port in sorted(criteria.deprioritized))
        text += f" (deprioritized: {hosts})"
    return text
