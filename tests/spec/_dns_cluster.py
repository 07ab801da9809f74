"""The deployments the DNS seedlist suite's cases discover, served by the simulator.

The suite's README asks for a three-member replica set named ``repl0`` on localhost ports 27017,
27018 and 27019, started with TLS; the SRV records point at ``localhost.test.build.10gen.cc``
(and ``localhost.sub.test.build.10gen.cc``), and the members call themselves ``localhost:<port>``.
:func:`serve_seedlist_deployment` starts that with :class:`SimulatedReplicaSet`: listening on
127.0.0.1, advertising ``localhost``, with a trustme CA whose server certificate is valid for
every name a client reaches the members by; the load-balanced folder's front on 8000 and the
sharded folder's two mongos on 27017 and 27018 (:class:`SimulatedShardedCluster`) likewise.

Two set-up choices the README leaves open:

* the members also accept plain TCP (``tls_allow_plain``, mongod's ``preferTLS``), so that the
  case whose TXT-given ``ssl`` is overridden by ``ssl=false`` can ping as the README requires;
* access control is on, with :data:`USERS` (the README expects the suite to pass with and
  without it; ``ping`` needs no authentication), so that a case carrying the suite's admin
  credential can discover the topology with a client that authenticates every connection.

:func:`loopback_getaddrinfo` makes the README's A records resolve without real DNS: a test
installs it over ``socket.getaddrinfo`` (never library code).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    # mypy reads the source tree, where adapters/ is a top-level folder (docs/architecture.md).
    from adapters.sim import SimulatedReplicaSet, SimulatedShardedCluster
else:
    from mongo_sansio.adapters.sim import SimulatedReplicaSet, SimulatedShardedCluster

__all__ = [
    "ADVERTISED_HOST",
    "LISTEN_HOST",
    "LOAD_BALANCER_PORT",
    "PORTS",
    "SET_NAME",
    "USERS",
    "ClusterUnavailable",
    "SeedlistCluster",
    "loopback_getaddrinfo",
    "serve_seedlist_deployment",
]

LISTEN_HOST = "127.0.0.1"
ADVERTISED_HOST = "localhost"
PORTS = (27017, 27018, 27019)
LOAD_BALANCER_PORT = 8000  # the load-balanced records' port (localhost.test.build.10gen.cc:8000)
SET_NAME = "repl0"
USERS = {"auser": "apass"}
"""Users of the admin database: the credential of replica-set/uri-with-auth.json."""

GetAddrInfo = Callable[..., Any]


class ClusterUnavailable(Exception):
    """The replica set cannot be served here; the message says why."""


@attrs.frozen
class SeedlistCluster:
    deployment: SimulatedReplicaSet | SimulatedShardedCluster
    ca_file: Path


def _taken_port(ports: Collection[int]) -> int | None:
    """The first of ``ports`` nothing can listen on at :data:`LISTEN_HOST`, if any."""
    for port in ports:
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((LISTEN_HOST, port))
        except OSError:
            return port
        finally:
            probe.close()
    return None


@contextlib.contextmanager
def serve_seedlist_deployment(workdir: Path, certificate_names: Collection[str], folder: str) -> Iterator[SeedlistCluster]:
    """Serve the README's deployment for the suite's ``folder`` until the context ends;
    ``certificate_names`` are the host names (and addresses) the server certificate is valid
    for.  ``replica-set``: the replica set on :data:`PORTS`; ``load-balanced``: a load
    balancer front on :data:`LOAD_BALANCER_PORT` (before a one-member replica set without
    access control on the next port); ``sharded``: two mongos on 27017 and 27018 (the shards'
    members and the config server on the next ports), access control as the replica set's.
    Raises :class:`ClusterUnavailable` when trustme is missing or a port is taken.
    """
    try:
        import trustme
    except ImportError:
        raise ClusterUnavailable("trustme (a test dependency) is not installed") from None
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*certificate_names).configure_cert(context)
    ca_file = workdir / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    deployment: Any
    if folder == "sharded":
        ports: tuple[int, ...] = tuple(range(PORTS[0], PORTS[0] + 5))  # 2 mongos, 2 shards of 1, config
        deployment = SimulatedShardedCluster(
            shards=2, mongos=2, members=1, auth=USERS, tls=context, host=LISTEN_HOST, port=ports[0]
        )
    else:
        load_balanced = folder == "load-balanced"
        ports = (LOAD_BALANCER_PORT, LOAD_BALANCER_PORT + 1) if load_balanced else PORTS
        deployment = SimulatedReplicaSet(
            members=1 if load_balanced else len(PORTS),
            replset=SET_NAME,
            auth=None if load_balanced else USERS,
            tls=context,
            host=LISTEN_HOST,
            port=ports[0],
            advertised_host=ADVERTISED_HOST,
            tls_allow_plain=True,
            **({"load_balanced": True} if load_balanced else {}),
        )
    try:
        deployment.start()
    except OSError as exc:
        port = _taken_port(ports)
        where = f"port {port}" if port is not None else f"one of the ports {ports}"
        raise ClusterUnavailable(
            f"{where} on {LISTEN_HOST} is taken ({exc}): the suite's deployment must listen "
            f"on {', '.join(map(str, ports))}"
        ) from exc
    try:
        yield SeedlistCluster(deployment, ca_file)
    finally:
        deployment.close()


def loopback_getaddrinfo(names: Collection[str], original: GetAddrInfo) -> GetAddrInfo:
    """A ``socket.getaddrinfo`` that answers ``names`` (lower case, no final dot) with
    :data:`LISTEN_HOST`, and passes every other name to ``original``."""
    pinned = {name.lower().rstrip(".") for name in names}

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host.lower().rstrip(".") in pinned:
            host = LISTEN_HOST
        return original(host, port, *args, **kwargs)

    return getaddrinfo
