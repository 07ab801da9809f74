"""A PyMongo-API event listener the load-balanced tests share (PyMongo's and our clients take
the same listener classes)."""

from __future__ import annotations

from typing import Any

from pymongo import monitoring


class PoolRecorder(monitoring.CommandListener, monitoring.ConnectionPoolListener):
    """A PyMongo-API command and pool listener (load-balanced tests): each command's name and
    serviceId, the connections checked out now (out minus in), the pools cleared (serviceIds)."""

    def __init__(self) -> None:
        self.commands: list[tuple[str, Any]] = []
        self.bodies: dict[str, list[Any]] = {}  # the commands sent, by name
        self.checked_out = 0
        self.cleared: list[Any] = []

    @property
    def service_ids(self) -> list[Any]:
        return [service_id for _name, service_id in self.commands]

    def started(self, event: Any) -> None:
        self.commands.append((event.command_name, event.service_id))
        self.bodies.setdefault(event.command_name, []).append(event.command)

    def connection_checked_out(self, event: Any) -> None:
        self.checked_out += 1

    def connection_checked_in(self, event: Any) -> None:
        self.checked_out -= 1

    def pool_cleared(self, event: Any) -> None:
        self.cleared.append(event.service_id)

    def _ignore(self, event: Any) -> None:
        pass

    succeeded = failed = _ignore
    pool_created = pool_ready = pool_closed = _ignore
    connection_created = connection_ready = connection_closed = _ignore
    connection_check_out_started = connection_check_out_failed = _ignore
