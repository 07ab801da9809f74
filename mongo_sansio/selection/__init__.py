"""Server selection: pure rules and the selection loop (docs/architecture.md).

* :mod:`.read_preference` -- ReadPreference, its validation, the ``$readPreference`` to send.
* :mod:`.rules` -- suitability, staleness, tag sets, latency window, the two-random choice.
* :mod:`.loop` -- the selection loop as a machine and a flow (select, else check and wait,
  else time out).
* :mod:`.errors` -- ServerSelectionTimeoutError, IncompatibleTopologyError.
"""

from mongo_sansio.selection.errors import (
    IncompatibleTopologyError,
    ServerSelectionError,
    ServerSelectionTimeoutError,
)
from mongo_sansio.selection.loop import (
    RequestCheckAndWait,
    Selected,
    SelectionState,
    ServerSelection,
    TopologyChanged,
    describe_topology,
    select_server_flow,
)
from mongo_sansio.selection.read_preference import (
    IDLE_WRITE_PERIOD,
    PRIMARY,
    SMALLEST_MAX_STALENESS,
    Mode,
    ReadPreference,
    check_max_staleness,
    read_preference_document,
    secondary_ok,
    smallest_max_staleness,
)
from mongo_sansio.selection.rules import (
    Operation,
    RandomDraw,
    SelectionCriteria,
    ServerSelector,
    check_compatible,
    choose,
    in_latency_window,
    select_server,
    selection_window,
    staleness,
    suitable_servers,
)

__all__ = [
    "ServerSelectionError",
    "ServerSelectionTimeoutError",
    "IncompatibleTopologyError",
    "Mode",
    "ReadPreference",
    "PRIMARY",
    "IDLE_WRITE_PERIOD",
    "SMALLEST_MAX_STALENESS",
    "smallest_max_staleness",
    "check_max_staleness",
    "read_preference_document",
    "secondary_ok",
    "Operation",
    "SelectionCriteria",
    "ServerSelector",
    "RandomDraw",
    "check_compatible",
    "staleness",
    "suitable_servers",
    "in_latency_window",
    "choose",
    "select_server",
    "selection_window",
    "SelectionState",
    "Selected",
    "RequestCheckAndWait",
    "TopologyChanged",
    "ServerSelection",
    "select_server_flow",
    "describe_topology",
]
