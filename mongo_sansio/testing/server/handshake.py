"""hello / isMaster: the reply mongod 7.0 (or 8.0) gives, and when an awaitable hello answers.

A replica set member's reply carries the set (setName, hosts, primary, me, electionId,
lastWrite); a standalone server's (``ReplicaSet(standalone=True)``) carries none of them, as a
mongod started without ``--replSet``: isWritablePrimary true and the limits.

Inputs: the hello command document, the member and cluster state, the connection's state
(its id, whether this is its first hello, the compressors it negotiated) and ``now``.
Outputs: the reply document (:func:`hello_reply`), and for an awaitable hello
(``topologyVersion`` + ``maxAwaitTimeMS``) whether it must wait and until when
(:func:`await_deadline`).  SASL fields (saslSupportedMechs, speculativeAuthenticate) are
filled by :mod:`.commands_admin`, which owns authentication.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mongo_sansio.bson import Int64, ObjectId
from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.server.oplog import OplogEntry, wall_datetime
from mongo_sansio.testing.server.replset import PRIMARY, SECONDARY, Member, ReplicaSet

if TYPE_CHECKING:
    pass

__all__ = ["hello_reply", "await_deadline", "SERVER_COMPRESSORS", "negotiate_compression", "topology_version"]

SERVER_COMPRESSORS = ("snappy", "zstd", "zlib")
MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024
MAX_MESSAGE_SIZE_BYTES = 48_000_000
MAX_WRITE_BATCH_SIZE = 100_000


def negotiate_compression(requested: Any) -> list[str]:
    """The server's compressors the client also offered, in the server's order."""
    if not isinstance(requested, list):
        return []
    return [name for name in SERVER_COMPRESSORS if name in requested]


def topology_version(member: Member) -> dict[str, Any]:
    return {"processId": member.process_id, "counter": Int64(member.counter)}


def op_time(cluster: ReplicaSet, entry: OplogEntry | None) -> dict[str, Any]:
    if entry is None:
        return {"ts": cluster.oplog.last_timestamp, "t": Int64(cluster.term)}
    return {"ts": entry.ts, "t": Int64(entry.t)}


def member_position(cluster: ReplicaSet, member: Member, now: float) -> OplogEntry | None:
    """The newest oplog entry ``member`` has applied (the primary: the newest one)."""
    if member.state == PRIMARY:
        return cluster.oplog.last
    if member.address in cluster.replication.isolated:  # cut off: it applied no further
        oplog = cluster.oplog
        applied = cluster.replication.applied(member.address)
        index = oplog.index_from(applied)
        return oplog.entries[index] if index < len(oplog.entries) else oplog.last
    if member.lag <= 0:
        return cluster.oplog.last
    return cluster.oplog.visible_at(cluster.wall(now) - member.lag)


def last_write(cluster: ReplicaSet, member: Member, now: float) -> dict[str, Any]:
    entry = member_position(cluster, member, now)
    stamp = op_time(cluster, entry)
    when = wall_datetime(entry.wall if entry is not None else cluster.wall(now))
    return {"opTime": stamp, "lastWriteDate": when, "majorityOpTime": stamp, "majorityWriteDate": when}


def hello_reply(
    cluster: ReplicaSet,
    member: Member,
    body: Mapping[str, Any],
    *,
    command_name: str,
    connection_id: int,
    compression: list[str] | None,
    now: float,
) -> dict[str, Any]:
    """The hello/isMaster reply fields (without ok, $clusterTime and operationTime)."""
    is_primary = member.state == PRIMARY
    legacy = command_name.lower() == "ismaster"
    reply: dict[str, Any] = {"topologyVersion": topology_version(member)}
    if cluster.standalone:
        # A mongod started without --replSet: no set fields, no oplog position.
        reply["ismaster" if legacy else "isWritablePrimary"] = is_primary
    else:
        reply["hosts"] = list(cluster.members)
        reply["setName"] = cluster.set_name
        reply["setVersion"] = cluster.set_version
        reply["ismaster" if legacy else "isWritablePrimary"] = is_primary
        reply["secondary"] = member.state == SECONDARY
        if cluster.primary is not None:
            reply["primary"] = cluster.primary
        reply["me"] = member.address
        if is_primary:
            reply["electionId"] = cluster.election_id
        reply["lastWrite"] = last_write(cluster, member, now)
    if body.get("helloOk") is True:
        reply["helloOk"] = True
    reply.update(
        maxBsonObjectSize=MAX_BSON_OBJECT_SIZE,
        maxMessageSizeBytes=MAX_MESSAGE_SIZE_BYTES,
        maxWriteBatchSize=MAX_WRITE_BATCH_SIZE,
        localTime=wall_datetime(cluster.member_wall(member, now)),
        logicalSessionTimeoutMinutes=30,
        connectionId=connection_id,
        minWireVersion=0,
        maxWireVersion=cluster.max_wire_version,
        readOnly=False,
    )
    if compression:
        reply["compression"] = list(compression)
    if not cluster.standalone:
        reply["isImplicitDefaultMajorityWC"] = True
    return reply


def await_deadline(member: Member, body: Mapping[str, Any], now: float) -> float | None:
    """For an awaitable hello whose topologyVersion is still current: when to answer anyway
    (``now + maxAwaitTimeMS``).  None: answer at once (not awaitable, or the topology moved)."""
    version = body.get("topologyVersion")
    if version is None or "maxAwaitTimeMS" not in body:
        if "maxAwaitTimeMS" in body and version is None:
            raise CommandError(31368, "Location31368", "A request with a 'maxAwaitTimeMS' must also have a 'topologyVersion'")
        return None
    wait_ms = body["maxAwaitTimeMS"]
    if not isinstance(wait_ms, int) or isinstance(wait_ms, bool) or wait_ms < 0:
        raise CommandError(31373, "Location31373", "maxAwaitTimeMS must be a non-negative integer")
    if not isinstance(version, Mapping):
        raise CommandError(14, "TypeMismatch", "topologyVersion must be an object")
    if version.get("processId") != member.process_id or not isinstance(version.get("processId"), ObjectId):
        return None
    counter = version.get("counter")
    if not isinstance(counter, int) or int(counter) != member.counter:
        return None
    return now + wait_ms / 1000.0
