"""Cluster time gossip (Driver Sessions and Causal Consistency specs).

Every reply of a replica set member or mongos carries ``$clusterTime``: ``{clusterTime:
Timestamp, signature: {...}}``.  A client remembers the highest it has seen
(:class:`ClusterClock`) and sends it back on every command to a server that supports sessions,
so that causally related operations on different servers are ordered.  Sessions keep their own
cluster time too (:meth:`~mongo_sansio.sessions.session.Session.advance_cluster_time`); the one
sent is the greater of the two.

Inputs: reply documents (or ``$clusterTime`` documents a user hands a session).  Outputs: the
``$clusterTime`` document to send.  Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson import Timestamp

__all__ = ["ClusterClock", "cluster_time_of", "later_cluster_time", "timestamp_key"]


def timestamp_key(value: Any) -> tuple[int, int] | None:
    """A Timestamp's ``(time, inc)``, the order in which cluster times compare; None when
    ``value`` is not a Timestamp (ours, or one with the same two integer fields, such as
    PyMongo's when replies are decoded into its types)."""
    if type(value) is Timestamp or isinstance(value, Timestamp):
        return (value.time, value.inc)
    time, inc = getattr(value, "time", None), getattr(value, "inc", None)
    if type(time) is int and type(inc) is int:
        return (time, inc)
    return None


def cluster_time_of(document: Any) -> Mapping[str, Any] | None:
    """A valid ``$clusterTime`` document (its ``clusterTime`` a Timestamp), else None."""
    if (type(document) is dict or isinstance(document, Mapping)) and timestamp_key(
        document.get("clusterTime")
    ) is not None:
        return document
    return None


def later_cluster_time(
    current: Mapping[str, Any] | None, candidate: Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    """The greater of two ``$clusterTime`` documents (``current`` on a tie or when the
    candidate is not valid)."""
    if type(candidate) is dict and type(current) is dict:
        # the usual case, compared at once: two decoded documents holding Timestamps (the
        # current one was checked when it was kept)
        new, old = candidate.get("clusterTime"), current["clusterTime"]
        if type(new) is Timestamp and type(old) is Timestamp:
            return candidate if (new.time, new.inc) > (old.time, old.inc) else current
    if candidate is None or not (type(candidate) is dict or isinstance(candidate, Mapping)):
        return current
    key = timestamp_key(candidate.get("clusterTime"))  # (read once: validity and order)
    if key is None:
        return current
    if current is None:
        return candidate
    if key > timestamp_key(current["clusterTime"]):  # type: ignore[operator]
        return candidate
    return current


class ClusterClock:
    """The highest ``$clusterTime`` the client has seen."""

    __slots__ = ("cluster_time",)

    def __init__(self) -> None:
        self.cluster_time: Mapping[str, Any] | None = None

    def advance(self, cluster_time: Mapping[str, Any] | None) -> None:
        self.cluster_time = later_cluster_time(self.cluster_time, cluster_time)

    def absorb(self, reply: Mapping[str, Any]) -> None:
        """Learn from a reply's ``$clusterTime``."""
        self.cluster_time = later_cluster_time(self.cluster_time, reply.get("$clusterTime"))
