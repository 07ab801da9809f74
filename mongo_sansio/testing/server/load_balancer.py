"""A load balancer in front of the simulated deployment (load-balancers.md, "Downstream
Visible Behavioral Changes"): a layer-4 front that hands each new connection to one service.

Theory of operation
-------------------
The front is a cluster wrapper with the socket server's ``connect(address, now)`` interface
(:class:`LoadBalancerFront`): a connection arriving at the front's own address is handed,
round-robin, to the next of its :class:`Services` that is up, and marked as having come in
through a load balancer (``ConnectionState.via_load_balancer``, ``service_id``); any other
address goes to the wrapped cluster unchanged (the members stay reachable directly).  With no
service up, the front drops the connection at once, as a balancer without a healthy backend.

The services are the mongoses behind a real balancer:

* over a replica set (:class:`PrimaryRouters`), ``count`` routers, each with its own
  ``serviceId``, that send the connection's commands to the primary, the one member that
  serves every command.  As a mongos retargets the new primary after a stepdown, each command
  of a router's connection goes to the primary of the moment (:func:`follow_primary`); a
  member that stops takes the connections it serves down with it (the client then sees a
  network error and clears that service's connections);
* over a sharded cluster, its mongos routers themselves
  (:class:`mongo_sansio.testing.sharded.cluster.MongosServices`), each serviceId the router's
  processId; a stopped router is skipped.

The mark changes what the connection's hello answers, as mongos started with a load balancer
port does (:func:`balanced_hello`):

* the first hello must say ``loadBalanced: true``; otherwise it fails with 354
  LoadBalancerSupportMismatch and the connection is closed after the reply (the error's
  CloseConnectionError category);
* the first hello's reply carries ``serviceId``: the router's (an ObjectId that does not
  change while the router runs);
* every reply on it is a router's: ``msg: "isdbgrid"``, writable, no replica set fields;
  ``isdbgrid`` answers 1 and serverStatus says ``process: "mongos"``
  (:func:`balanced_execute`).

Inputs: the wrapped cluster, the front's address, its services, ``now``.  Outputs: the
connections of the socket server; hello reply documents.  No sockets, clocks or randomness.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from mongo_sansio.bson import ObjectId
from mongo_sansio.errors import LocalProtocolError
from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.server.replset import PRIMARY

if TYPE_CHECKING:
    from mongo_sansio.testing.server.connection import ServerConnection
    from mongo_sansio.testing.server.context import ConnectionState, Context, Outcome
    from mongo_sansio.testing.server.replset import Member, ReplicaSet

__all__ = [
    "LOAD_BALANCER_MISMATCH",
    "LoadBalancerFront",
    "PrimaryRouters",
    "Services",
    "balanced_execute",
    "balanced_hello",
]

#: mongos' answer to a first hello without ``loadBalanced: true`` on its load balancer port
LOAD_BALANCER_MISMATCH = CommandError(
    354,
    "LoadBalancerSupportMismatch",
    "The server is being accessed through a load balancer, but this driver does not have load "
    "balancing enabled",
)

#: replica set fields a router's hello does not carry
_SET_FIELDS = ("hosts", "setName", "setVersion", "secondary", "primary", "me", "electionId", "lastWrite")


class Connectable(Protocol):
    """What the front wraps: a deployment that hands out server connections by address."""

    def connect(self, address: str, now: float) -> ServerConnection: ...


class Services(Protocol):
    """The services behind a front: how many there are, and where service ``index`` is served
    now -- ``(address, serviceId)``, the serviceId None for the serving member's processId
    (what mongos answers) -- or None while it is down."""

    @property
    def count(self) -> int: ...

    def backend(self, index: int) -> tuple[str, ObjectId | None] | None: ...

    def anchor(self) -> str:
        """An address whose connection the front may make only to drop it (nothing is up)."""
        ...


class PrimaryRouters:
    """``count`` routers over a replica set, each a service with its own serviceId (drawn from
    the cluster's seeded ids, fixed while it runs), all serving through the primary of the
    moment (down while there is none)."""

    def __init__(self, cluster: ReplicaSet, count: int = 1, *, now: float = 0.0) -> None:
        if count < 1:
            raise LocalProtocolError("a load balancer fronts one service or more")
        self.cluster = cluster
        self.service_ids = [
            ObjectId.from_parts(int(cluster.wall(now)), cluster.random_bytes(5), i) for i in range(count)
        ]

    @property
    def count(self) -> int:
        return len(self.service_ids)

    def backend(self, index: int) -> tuple[str, ObjectId | None] | None:
        primary = self.cluster.primary
        if primary is None or self.cluster.members[primary].state != PRIMARY:
            return None
        return primary, self.service_ids[index]

    def anchor(self) -> str:
        return next(iter(self.cluster.members))


class LoadBalancerFront:
    """See the module documentation.  With ``multi_address`` (and more than one service) a
    second front rotates over every service while ``address`` reaches the first one alone (the
    load balancer spec's test setup: SINGLE_MONGOS_LB_URI and MULTI_MONGOS_LB_URI); without it,
    ``address`` rotates over them all."""

    def __init__(
        self,
        cluster: Connectable,
        address: str,
        services: Services,
        *,
        multi_address: str | None = None,
    ) -> None:
        self.cluster = cluster
        self.address = address
        self.services = services
        every = list(range(services.count))
        self._fronts = {address: every if multi_address is None else every[:1]}
        if multi_address is not None:
            self._fronts[multi_address] = every
        self._turns = dict.fromkeys(self._fronts, 0)

    def connect(self, address: str, now: float) -> ServerConnection:
        rotation = self._fronts.get(address)
        if rotation is None:
            return self.cluster.connect(address, now)
        backend = None
        for _ in rotation:  # the next service that is up
            index = rotation[self._turns[address] % len(rotation)]
            self._turns[address] += 1
            backend = self.services.backend(index)
            if backend is not None:
                break
        if backend is None:
            # no backend up: the connection is dropped at once
            connection = self.cluster.connect(self.services.anchor(), now)
            connection.close("no service behind the load balancer is up")
            return connection
        backend_address, service_id = backend
        connection = self.cluster.connect(backend_address, now)
        connection.state.via_load_balancer = True
        connection.state.service_id = service_id
        return connection


def follow_primary(connection: ServerConnection) -> None:
    """A router's connection: its next command goes to the current primary (none: it stays)."""
    cluster = connection.cluster
    primary = cluster.primary
    old = connection.member
    if primary is None or old.address == primary:
        return
    if connection in old.connections:
        old.connections.remove(connection)
    connection.member = cluster.members[primary]
    connection.member.connections.append(connection)


def balanced_hello(
    reply: dict[str, Any], member: Member, state: ConnectionState, body: Mapping[str, Any], *, first: bool
) -> dict[str, Any]:
    """The hello ``reply`` of a connection that came through the balancer (see the module
    documentation); raises :data:`LOAD_BALANCER_MISMATCH` (after marking the connection to
    close) for a first hello without ``loadBalanced: true``."""
    if first and body.get("loadBalanced") is not True:
        state.close_after_reply = "the driver does not have load balancing enabled"
        raise LOAD_BALANCER_MISMATCH
    out = {key: value for key, value in reply.items() if key not in _SET_FIELDS}
    legacy = "ismaster" in out
    out.pop("ismaster" if legacy else "isWritablePrimary", None)
    out = {("ismaster" if legacy else "isWritablePrimary"): True, "msg": "isdbgrid", **out}
    if first:
        out["serviceId"] = state.service_id if state.service_id is not None else member.process_id
    return out


def balanced_execute(ctx: Context) -> Outcome:
    """A command on a connection that came through the balancer, answered as the router
    behind it answers: ``isdbgrid`` (which a replica set member does not know) and
    serverStatus's ``process`` are the router's; everything else is the member's."""
    from mongo_sansio.testing.server.dispatch import execute, finish  # (an import cycle)

    if ctx.request.name == "isdbgrid":
        return finish(ctx, {"isdbgrid": 1, "hostname": ctx.member.address, "ok": 1.0})
    outcome = execute(ctx)
    if ctx.request.name == "serverStatus" and isinstance(outcome, dict) and outcome.get("ok") == 1.0:
        outcome["process"] = "mongos"
    return outcome

