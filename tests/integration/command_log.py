"""A PyMongo command listener the integration tests share (imported after their PyMongo skip)."""

from __future__ import annotations

import threading

from pymongo import monitoring


class Commands(monitoring.CommandListener):
    """Records the commands a client starts."""

    def __init__(self) -> None:
        self.events: list[monitoring.CommandStartedEvent] = []
        self.lock = threading.Lock()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        with self.lock:
            self.events.append(event)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    def named(self, name: str) -> list[monitoring.CommandStartedEvent]:
        with self.lock:
            return [event for event in self.events if event.command_name == name]
