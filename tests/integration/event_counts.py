"""A monitoring listener that counts the connection pool and heartbeat events by class name
(the gevent and fork-safety tests read the counts)."""

from __future__ import annotations

from collections import Counter

from mongo_sansio import monitoring


class EventCounts(monitoring.ConnectionPoolListener, monitoring.ServerHeartbeatListener):
    """``counts[name]``: how many events of class ``name`` were published."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def _count(self, event: object) -> None:
        self.counts[type(event).__name__] += 1

    pool_created = pool_ready = pool_cleared = pool_closed = _count
    connection_created = connection_ready = connection_closed = _count
    connection_check_out_started = connection_check_out_failed = _count
    connection_checked_out = connection_checked_in = _count
    started = succeeded = failed = _count
