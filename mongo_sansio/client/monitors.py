"""One server's monitor, driven: the heartbeat machine and its two background tasks.

Theory of operation
-------------------
:class:`ServerMonitor` owns one :class:`~mongo_sansio.sdam.heartbeat.Monitor` (the pure
policy: when to check, with which hello, streaming or polling, the RTT channel) and turns its
actions into work for two background flows, one per channel (check and RTT), each run as a
task of the runtime (:class:`~mongo_sansio.client.runtime.Spawn`).  A task takes its channel's
queued actions in order -- open a monitoring connection (handshake, no authentication), send a
hello, read the next streamed reply -- and feeds each outcome back to the machine; with nothing
queued it waits on its signal until the machine's next deadline.

The machine's reports (heartbeat started/succeeded/failed, RTT samples) go to the client
through ``report``, which forwards them to the topology machine; the topology's answers may
come back here as :meth:`request_check` (an operation or a waiting selection wants news) or
:meth:`cancel_check` (a pool was cleared with interruption).  Closing a monitoring connection
closes its stream at once, which interrupts a task blocked reading it; the result that task
then reports names a connection the machine already closed and is ignored, so a cancelled or
closed check never reports anything.

Inputs: :meth:`start`, :meth:`request_check`, :meth:`cancel_check`, :meth:`close` (``now`` is
monotonic seconds), and the outcomes of the tasks' primitives.  Outputs: the two tasks (from
:meth:`start`), reports through ``report``, streams closed through the links.

Every method runs under the client's exclusion (a lock for threads, nothing for one event
loop), as every step of the tasks does.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from typing import Any

from mongo_sansio.client.link import Link, LinkOptions, exchange, open_link, read_more
from mongo_sansio.client.runtime import Signal, Spawn, Wait
from mongo_sansio.errors import MongoError, NetworkTimeout, ServerError
from mongo_sansio.flow import Now
from mongo_sansio.sdam.description import Address
from mongo_sansio.sdam.heartbeat import Channel, Monitor, MonitorSettings
from mongo_sansio.sdam.heartbeat_actions import (
    CloseMonitorConnection,
    MonitorAction,
    MonitorOutput,
    MonitorReport,
    OpenMonitorConnection,
    ReadNextReply,
    SendHello,
)

__all__ = ["ServerMonitor"]

TaskFlow = Generator[Any, Any, None]


class ServerMonitor:
    """The monitor of one server and its tasks (see the module docstring).

    ``transport_address`` is where the tasks connect; ``link_options`` and ``next_link_id``
    make the monitoring connections; ``report`` receives the machine's reports in order.
    """

    def __init__(
        self,
        address: Address,
        transport_address: tuple[str, int],
        settings: MonitorSettings,
        *,
        link_options: LinkOptions,
        next_link_id: Callable[[], int],
        report: Callable[[MonitorReport], None],
    ) -> None:
        self.machine = Monitor(address, settings)
        self.address = address
        self._transport_address = transport_address
        self._link_options = link_options
        self._next_link_id = next_link_id
        self._report = report
        self._queues: dict[Channel, deque[MonitorAction]] = {
            Channel.CHECK: deque(),
            Channel.RTT: deque(),
        }
        self._signals: dict[Channel, Signal | None] = {Channel.CHECK: None, Channel.RTT: None}
        self._links: dict[int, Link] = {}
        self.closed = False

    # -- inputs -----------------------------------------------------------------------------

    def start(self, now: float) -> list[Spawn]:
        """Begin monitoring; returns the two tasks to spawn."""
        self._route(self.machine.start(now))
        host, port = self.address
        return [
            Spawn(self._task(Channel.CHECK), f"monitor {host}:{port}"),
            Spawn(self._task(Channel.RTT), f"rtt monitor {host}:{port}"),
        ]

    def request_check(self, now: float) -> None:
        if self.closed:
            return
        self._route(self.machine.request_check(now))
        self._wake(Channel.CHECK)

    def cancel_check(self, now: float) -> None:
        if self.closed:
            return
        self._route(self.machine.cancel_check(now))
        self._wake(Channel.CHECK)

    def close(self, now: float) -> None:
        """Stop both tasks and close both connections (idempotent)."""
        if self.closed:
            return
        self.closed = True
        self._route(self.machine.close(now))
        for queue in self._queues.values():
            queue.clear()
        for link in list(self._links.values()):
            link.close()
        self._links.clear()
        self._wake(Channel.CHECK)
        self._wake(Channel.RTT)

    # -- the tasks ----------------------------------------------------------------------------

    def _task(self, channel: Channel) -> TaskFlow:
        queue = self._queues[channel]
        while not self.closed:
            if queue:
                yield from self._perform(queue.popleft())
                continue
            signal = Signal(f"{channel.value} monitor {self.address}")
            self._signals[channel] = signal
            deadline = self.machine.next_deadline()
            yield Wait(signal, deadline)
            self._signals[channel] = None
            if self.closed:
                return
            now = yield Now()
            due = self.machine.next_deadline()
            if due is not None and now >= due:
                self._route(self.machine.handle_timeout(now))

    def _perform(self, action: MonitorAction) -> TaskFlow:
        if isinstance(action, OpenMonitorConnection):
            yield from self._open(action)
            return
        if isinstance(action, CloseMonitorConnection):
            return  # carried out when it was routed
        link = self._links.get(action.connection_id)
        if link is None:
            return  # closed meanwhile: the machine has moved on
        now = yield Now()
        timeout = action.timeout
        deadline = None if timeout is None else now + timeout
        try:
            if isinstance(action, SendHello):
                reply = yield from exchange(
                    link,
                    "admin",
                    action.command,
                    exhaust_allowed=action.exhaust_allowed,
                    deadline=deadline,
                )
            else:
                reply = yield from read_more(link, deadline=deadline)
        except MongoError as error:
            self._links.pop(action.connection_id, None)
            now = yield Now()
            if not self.closed:
                self._failed(action.channel, action.connection_id, error, now)
            return
        now = yield Now()
        if self.closed:
            return
        if action.channel is Channel.CHECK:
            self._route(
                self.machine.reply(
                    action.connection_id,
                    reply.document,
                    now=now,
                    more_to_come=reply.more_to_come,
                )
            )
        else:
            self._route(self.machine.rtt_reply(action.connection_id, reply.document, now=now))

    def _open(self, action: OpenMonitorConnection) -> TaskFlow:
        now = yield Now()
        deadline = None if action.timeout is None else now + action.timeout

        def stream_opened(link: Link) -> None:
            # known from now on, so that close() or a cancelled check cuts the handshake
            if self.closed or self._current(action) != action.connection_id:
                link.close()
            else:
                self._links[action.connection_id] = link

        try:
            link = yield from open_link(
                self._next_link_id(),
                self._transport_address,
                self._link_options,
                deadline=deadline,
                on_stream=stream_opened,
            )
        except ServerError as error:  # the hello itself failed (ok: 0): a command error
            self._links.pop(action.connection_id, None)
            now = yield Now()
            if not self.closed and action.channel is Channel.CHECK:
                reply = dict(error.details) or {"ok": 0, "errmsg": str(error)}
                self._route(self.machine.connected(action.connection_id, reply, now=now))
            elif not self.closed:
                self._failed(action.channel, action.connection_id, error, now)
            return
        except MongoError as error:
            self._links.pop(action.connection_id, None)
            now = yield Now()
            if not self.closed:
                self._failed(action.channel, action.connection_id, error, now)
            return
        except BaseException:
            self._links.pop(action.connection_id, None)
            raise
        now = yield Now()
        description = link.description
        if self.closed or self._current(action) != action.connection_id or description is None:
            if self._links.get(action.connection_id) is link:
                del self._links[action.connection_id]
            link.close()
            return
        self._links[action.connection_id] = link
        if action.channel is Channel.CHECK:
            self._route(
                self.machine.connected(
                    action.connection_id,
                    description.reply,
                    now=now,
                    round_trip_time=link.round_trip_time,
                )
            )
        else:
            self._route(
                self.machine.rtt_connected(
                    action.connection_id, now=now, round_trip_time=link.round_trip_time
                )
            )

    def _current(self, action: OpenMonitorConnection) -> int | None:
        """The connection the machine expects on ``action``'s channel now."""
        if action.channel is Channel.CHECK:
            return self.machine.connection_id
        return self.machine.rtt_connection_id

    def _failed(self, channel: Channel, connection_id: int, error: MongoError, now: float) -> None:
        if channel is Channel.CHECK:
            timeout = isinstance(error, NetworkTimeout)
            self._route(self.machine.failed(connection_id, error, now=now, timeout=timeout))
        else:
            self._route(self.machine.rtt_failed(connection_id, error, now=now))

    # -- outputs ------------------------------------------------------------------------------

    def _route(self, outputs: list[MonitorOutput]) -> None:
        for output in outputs:
            if isinstance(output, CloseMonitorConnection):
                link = self._links.pop(output.connection_id, None)
                if link is not None:
                    link.close()
                queue = self._queues[output.channel]
                stale = [a for a in queue if a.connection_id == output.connection_id]
                for action in stale:
                    queue.remove(action)
            elif isinstance(output, OpenMonitorConnection | SendHello | ReadNextReply):
                self._queues[output.channel].append(output)
                self._wake(output.channel)
            else:
                self._report(output)

    def _wake(self, channel: Channel) -> None:
        signal = self._signals[channel]
        if signal is not None:
            signal.fire()
