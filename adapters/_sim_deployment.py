"""What the simulated deployments (:mod:`.sim`, :mod:`.sim_sharded`) share: a pure cluster
served by a :class:`LoopbackServer` once started, its lifecycle as a context manager, the
URIs a client needs, and :meth:`LoopbackDeployment.call` -- the one way in to the cluster
while it serves (under the server's lock).  Each deployment starts its own cluster and says
which hosts its URI lists (``_uri``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar
from urllib.parse import quote

if TYPE_CHECKING:
    from transports.sim_server import Clock, LoopbackServer
else:
    from mongo_sansio.transports.sim_server import Clock, LoopbackServer

__all__ = ["LoopbackDeployment", "ManualClock"]

ClusterT = TypeVar("ClusterT")


class ManualClock:
    """A monotonic clock that follows the real one, plus whatever a test adds with
    :meth:`advance` (so a test can jump past heartbeats, idle timeouts or the periodic noop
    without sleeping). The server re-reads its deadlines after every jump."""

    def __init__(self, base: Clock = time.monotonic) -> None:
        self._base = base
        self._offset = 0.0
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def __call__(self) -> float:
        with self._lock:
            return float(self._base()) + self._offset

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a monotonic clock cannot go back")
        with self._lock:
            self._offset += seconds
        for listener in list(self._listeners):
            listener()

    def on_advance(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)


class LoopbackDeployment(Generic[ClusterT]):
    """The shared part; subclasses set ``auth``, ``_cluster`` and ``_server`` in ``start``."""

    #: what the deployment is called in "not started" errors
    kind = "simulated deployment"
    auth: dict[str, str] | None
    clock: Clock
    _cluster: ClusterT | None
    _server: LoopbackServer | None

    def start(self) -> Self:
        raise NotImplementedError

    def _uri(self, userinfo: str) -> str:
        raise NotImplementedError

    def _serve(self) -> None:
        """Start serving (``start`` built ``_cluster`` and ``_server``)."""
        server, cluster = self.server, self.cluster
        if isinstance(self.clock, ManualClock):
            # After a jump the cluster catches up (the periodic noop) and every connection
            # re-reads its deadline (server.call wakes them all).
            tick: Callable[[float], Any] = cluster.tick  # type: ignore[attr-defined]
            self.clock.on_advance(lambda: server.call(tick))
        server.start()

    def close(self) -> None:
        if self._server is not None:
            self._server.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- what a client needs ---------------------------------------------------------------

    @property
    def uri(self) -> str:
        """The URI, without credentials (see :meth:`uri_with_credentials`)."""
        return self._uri("")

    def uri_with_credentials(self, user: str | None = None) -> str:
        """The URI with ``user`` (default: the first configured user) and its password."""
        if not self.auth:
            return self.uri
        name = user if user is not None else next(iter(self.auth))
        return self._uri(f"{quote(name, safe='')}:{quote(self.auth[name], safe='')}@")

    @property
    def cluster(self) -> ClusterT:
        """The pure cluster state. Read it only through :meth:`call` while serving."""
        if self._cluster is None:
            raise RuntimeError(f"the {self.kind} is not started")
        return self._cluster

    @property
    def server(self) -> LoopbackServer:
        if self._server is None:
            raise RuntimeError(f"the {self.kind} is not started")
        return self._server

    def call(self, operation: Callable[[ClusterT, float], Any]) -> Any:
        """Run ``operation(cluster, now)`` under the server's lock (the cluster is not
        thread-safe), then let every connection send what the change made ready."""
        cluster = self.cluster
        return self.server.call(lambda now: operation(cluster, now))
