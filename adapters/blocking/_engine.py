"""The blocking engine: one client core, run by the synchronous interpreter on threads.

:class:`Engine` is the shared :class:`~.._engine_base.EngineBase` (the client core and the
preparation of each operation) run by the synchronous interpreter on
:class:`~._runtime.ThreadRuntime`.  Every decision is the core's.  The gevent client reuses it
with a greenlet runtime (a subclass whose :meth:`Engine.new_runtime` gives one); a forked child
gets a new runtime of the same kind (:mod:`.._fork`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.client import ClientSettings
from mongo_sansio.client.srv_polling import SrvSource
from mongo_sansio.flow import Flow

from .._engine_base import EngineBase, Primitives
from .._sync import SyncInterpreter, SyncRuntime
from ._runtime import ThreadRuntime

if TYPE_CHECKING:
    from transports.blocking import make_ssl_context
else:
    from mongo_sansio.transports.blocking import make_ssl_context

__all__ = ["Engine"]

T = TypeVar("T")
_CLOSE_JOIN_SECONDS = 5.0


class Engine(EngineBase):
    """See the module docstring.  ``metadata`` is the handshake's ``client`` document;
    ``publish`` delivers monitoring events (None when nobody listens)."""

    def __init__(
        self,
        settings: ClientSettings,
        *,
        metadata: Mapping[str, Any],
        publish: Callable[[object], None] | None = None,
        runtime: SyncRuntime | None = None,
        faas: bool = False,
        topology_id: object = None,
        srv: SrvSource | None = None,
        resolver: Any = None,
    ) -> None:
        self.settings = settings
        self.resolver = resolver
        primitives = self._use(self.new_runtime() if runtime is None else runtime)
        super().__init__(
            settings,
            metadata=metadata,
            spawn=primitives.spawn,
            close_stream=primitives.close_stream,
            monotonic=primitives.monotonic,
            lock=primitives.lock,
            publish=publish,
            faas=faas,
            topology_id=topology_id,
            srv=srv,
        )

    def new_runtime(self) -> SyncRuntime:
        """A runtime of this engine's kind, for its settings: threads and blocking sockets."""
        tls = self.settings.tls
        return ThreadRuntime(make_ssl_context(tls) if tls.enabled else None, self.resolver)

    def renewed_runtime(self) -> Primitives:
        return self._use(self.new_runtime())

    def _use(self, runtime: SyncRuntime) -> Primitives:
        self.runtime = runtime
        self.interpreter = SyncInterpreter(runtime)
        return Primitives(
            self.interpreter.spawn, runtime.close_stream, runtime.monotonic, runtime.lock
        )

    def run(
        self,
        flow: Flow[T],
        *,
        timeout: float | None = None,
        session: Any = None,
        codec_options: CodecOptions | None = None,
    ) -> T:
        """Run an operation flow of the core to its result (see
        :meth:`~.._engine_base.EngineBase.operation`)."""
        # operation() first: in a forked child it renews the runtime, and so the interpreter
        task = self.operation(flow, timeout, session, codec_options)
        result: T = self.interpreter.run(task)
        return result

    def close(self) -> None:
        """Stop the monitors and pools, close every connection, end the background threads."""
        for flow in self.closing_flows():
            try:
                self.interpreter.run(flow)
            except Exception:  # noqa: BLE001 - best effort, the client is going away
                pass
        self.close_core()
        join = getattr(self.runtime, "join", None)
        if join is not None:
            join(_CLOSE_JOIN_SECONDS)
