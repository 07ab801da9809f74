"""Server Discovery and Monitoring: pure machines (docs/architecture.md).

* :mod:`.description` -- addresses, ServerType/TopologyType, ServerDescription (from hello).
* :mod:`.topology` -- TopologySettings, TopologyDescription and the pure update rules.
* :mod:`.errors` -- classifying application errors into actions.
* :mod:`.machine` -- the Topology machine sequencing the rules into events and actions.
* :mod:`.events` / :mod:`.actions` -- what the machine outputs.
* :mod:`.monitor` -- round-trip-time statistics.
"""

from mongo_sansio.sdam.actions import (
    CancelCheck,
    ClearPool,
    MarkUnknown,
    ReadyPool,
    RequestImmediateCheck,
    SdamAction,
    StartMonitor,
    StopMonitor,
)
from mongo_sansio.sdam.description import (
    DEFAULT_PORT,
    Address,
    InvalidHelloReply,
    ServerDescription,
    ServerType,
    TopologyType,
    TopologyVersion,
    compare_topology_versions,
    format_address,
    is_address,
    parse_address,
)
from mongo_sansio.sdam.errors import (
    ApplicationError,
    ErrorKind,
    ErrorPhase,
    classify_application_error,
    is_not_writable_primary,
    is_recovering,
    is_shutdown,
    is_state_change_error,
)
from mongo_sansio.sdam.events import (
    SdamEvent,
    ServerClosedEvent,
    ServerDescriptionChangedEvent,
    ServerHeartbeatFailedEvent,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
    ServerOpeningEvent,
    TopologyClosedEvent,
    TopologyDescriptionChangedEvent,
    TopologyOpeningEvent,
)
from mongo_sansio.sdam.machine import Output, Topology
from mongo_sansio.sdam.monitor import RoundTripTimes
from mongo_sansio.sdam.topology import (
    CLIENT_MAX_WIRE_VERSION,
    CLIENT_MIN_WIRE_VERSION,
    MIN_HEARTBEAT_FREQUENCY,
    TopologyDescription,
    TopologySettings,
    TopologyUpdate,
    apply_server_description,
)

__all__ = [
    "Address",
    "DEFAULT_PORT",
    "parse_address",
    "format_address",
    "is_address",
    "ServerType",
    "TopologyType",
    "TopologyVersion",
    "compare_topology_versions",
    "ServerDescription",
    "InvalidHelloReply",
    "CLIENT_MIN_WIRE_VERSION",
    "CLIENT_MAX_WIRE_VERSION",
    "MIN_HEARTBEAT_FREQUENCY",
    "TopologySettings",
    "TopologyDescription",
    "TopologyUpdate",
    "apply_server_description",
    "ApplicationError",
    "ErrorKind",
    "ErrorPhase",
    "classify_application_error",
    "is_recovering",
    "is_not_writable_primary",
    "is_shutdown",
    "is_state_change_error",
    "Topology",
    "Output",
    "RoundTripTimes",
    "SdamEvent",
    "TopologyOpeningEvent",
    "TopologyClosedEvent",
    "TopologyDescriptionChangedEvent",
    "ServerOpeningEvent",
    "ServerClosedEvent",
    "ServerDescriptionChangedEvent",
    "ServerHeartbeatStartedEvent",
    "ServerHeartbeatSucceededEvent",
    "ServerHeartbeatFailedEvent",
    "SdamAction",
    "StartMonitor",
    "StopMonitor",
    "ReadyPool",
    "ClearPool",
    "RequestImmediateCheck",
    "CancelCheck",
    "MarkUnknown",
]
