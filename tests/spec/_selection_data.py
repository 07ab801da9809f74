"""Building selection inputs from the server-selection and max-staleness suites' JSON.

Both suites describe a topology the same way: ``{type, servers: [{address, type, avg_rtt_ms,
tags, lastUpdateTime (ms), lastWrite: {lastWriteDate (ms)}, maxWireVersion}]}``.  Times become
seconds; a missing ``lastUpdateTime`` is 0 (the suites' epoch).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson import DatetimeMS
from mongo_sansio.sdam import (
    ServerDescription,
    ServerType,
    TopologyDescription,
    TopologySettings,
    TopologyType,
    parse_address,
)
from mongo_sansio.selection import Operation, ReadPreference, SelectionCriteria

DEFAULT_HEARTBEAT_MS = 10_000


def server(data: Mapping[str, Any]) -> ServerDescription:
    last_write = data.get("lastWrite") or {}
    last_write_date = last_write.get("lastWriteDate")
    rtt = data.get("avg_rtt_ms")
    return ServerDescription(
        address=parse_address(data["address"]),
        type=ServerType(data["type"]),
        round_trip_time=None if rtt is None else rtt / 1000.0,
        last_update_time=int(data.get("lastUpdateTime", 0)) / 1000.0,
        last_write_date=None if last_write_date is None else DatetimeMS(int(last_write_date)),
        max_wire_version=int(data.get("maxWireVersion", 0)),
        tags=data.get("tags") or {},
    )


def topology(data: Mapping[str, Any]) -> TopologyDescription:
    servers = [server(s) for s in data["servers"]]
    return TopologyDescription(
        type=TopologyType(data["type"]), servers={sd.address: sd for sd in servers}
    )


def settings(
    case: Mapping[str, Any], topology_description: TopologyDescription
) -> TopologySettings:
    seeds = list(topology_description.servers) or [("seed.invalid", 27017)]
    return TopologySettings(
        seeds=seeds,
        heartbeat_frequency=case.get("heartbeatFrequencyMS", DEFAULT_HEARTBEAT_MS) / 1000.0,
    )


def criteria(case: Mapping[str, Any]) -> SelectionCriteria:
    """May raise ConfigurationError (an invalid read preference is a test outcome)."""
    deprioritized = [parse_address(s["address"]) for s in case.get("deprioritized_servers", [])]
    if case.get("operation", "read") == "write":
        return SelectionCriteria(operation=Operation.WRITE, deprioritized=deprioritized)
    read_preference = ReadPreference.from_document(
        case.get("read_preference") or {"mode": "primary"}
    )
    return SelectionCriteria.for_read(read_preference, deprioritized=deprioritized)


def addresses(servers: list[Mapping[str, Any]]) -> set[tuple[str, int]]:
    return {parse_address(s["address"]) for s in servers}
