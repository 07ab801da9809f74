"""Initial DNS Seedlist Discovery spec tests, run offline.

A DNS server on 127.0.0.1 (dnslib) serves the records the suite's README lists (written here
as data: they are facts of the test set-up).  Every case is parsed with ``parse_uri``, resolved
by the seedlist machine through a real resolver pointed at that server -- blocking, asyncio and
trio -- and merged with ``with_seedlist``; then ``seeds``/``numSeeds``, ``options``,
``parsed_options`` and ``error`` are checked.

What needs a running cluster (``hosts``, ``numHosts`` after SDAM's first scan, the ``ping``) is
one more test per case.  The replica-set cases run it against the simulated replica set
(``_dns_cluster.py``: ``repl0`` on 127.0.0.1:27017-27019, members calling themselves
``localhost:<port>``, TLS from a trustme CA): the blocking ``MongoClient`` resolves the case's
URI through the same DNS server, connects (the README's A records are pinned to 127.0.0.1 by
patching ``socket.getaddrinfo`` in the test), pings unless ``ping`` is false -- then only a server
selection runs, which discovers the topology as well -- and its topology's servers are compared
with ``hosts``/``numHosts``.  The load-balanced cases run against the simulator's load balancer
front on 127.0.0.1:8000 (a one-member replica set behind it, TLS, no access control), the
sharded cases -- srvMaxHosts against mongos -- against a simulated sharded cluster whose two
mongos listen on 127.0.0.1:27017 and 27018 (TLS, the replica set's users).  One deployment is
served at a time: the replica set and the sharded cluster share port 27017.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import random
import socket
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _dns_cluster import (
    ADVERTISED_HOST,
    USERS,
    ClusterUnavailable,
    SeedlistCluster,
    loopback_getaddrinfo,
    serve_seedlist_deployment,
)
from _specs import suite_cases

pytest.importorskip("dns.resolver", reason="dnspython (the srv extra) is not installed")
dnslib = pytest.importorskip("dnslib", reason="dnslib (a test dependency) is not installed")
from dnslib.server import BaseResolver, DNSLogger, DNSServer  # type: ignore[import-untyped]  # noqa: E402

from mongo_sansio.errors import ConfigurationError  # noqa: E402
from mongo_sansio.flow import Flow, SelectServer, ServerInfo  # noqa: E402
from mongo_sansio.sdam.description import format_address  # noqa: E402
from mongo_sansio.uri import ConnectionString, parse_uri  # noqa: E402
from mongo_sansio.uri.seedlist import Seedlist, apply_seedlist, discovery_for  # noqa: E402

if TYPE_CHECKING:
    # mypy reads the source tree, where adapters/ and transports/ are top-level folders.
    from adapters.blocking import MongoClient
    from transports.dns import BlockingResolver, resolve_seedlist
    from transports.dns_asyncio import AsyncioResolver, resolve_seedlist_async
else:
    from mongo_sansio.adapters.blocking import MongoClient
    from mongo_sansio.transports.dns import BlockingResolver, resolve_seedlist
    from mongo_sansio.transports.dns_asyncio import AsyncioResolver, resolve_seedlist_async

SUITE = "initial-dns-seedlist-discovery"
HAVE_TRIO = importlib.util.find_spec("trio") is not None
RUNTIMES = ("blocking", "asyncio", "trio")
CLUSTER = "hosts after discovery"
TTL = 86400

# -- the README's records ----------------------------------------------------------------------

DOMAIN = "test.build.10gen.cc"
LOCALHOST = f"localhost.{DOMAIN}"

A_RECORDS = {LOCALHOST: "127.0.0.1", f"localhost.sub.{DOMAIN}": "127.0.0.1"}

SRV_RECORDS: dict[str, list[tuple[int, str]]] = {
    f"_mongodb._tcp.test1.{DOMAIN}": [(27017, LOCALHOST), (27018, LOCALHOST)],
    f"_mongodb._tcp.test2.{DOMAIN}": [(27018, LOCALHOST), (27019, LOCALHOST)],
    f"_mongodb._tcp.test3.{DOMAIN}": [(27017, LOCALHOST)],
    f"_mongodb._tcp.test5.{DOMAIN}": [(27017, LOCALHOST)],
    f"_mongodb._tcp.test6.{DOMAIN}": [(27017, LOCALHOST)],
    f"_mongodb._tcp.test7.{DOMAIN}": [(27017, LOCALHOST)],
    f"_mongodb._tcp.test8.{DOMAIN}": [(27017, LOCALHOST)],
    f"_mongodb._tcp.test10.{DOMAIN}": [(27017, LOCALHOST)],
    f"_mongodb._tcp.test11.{DOMAIN}": [(27017, LOCALHOST)],
    f"_mongodb._tcp.test12.{DOMAIN}": [(27017, "localhost.build.10gen.cc")],
    f"_mongodb._tcp.test13.{DOMAIN}": [(27017, "test.build.10gen.cc")],
    f"_mongodb._tcp.test14.{DOMAIN}": [(27017, "localhost.not-test.build.10gen.cc")],
    f"_mongodb._tcp.test15.{DOMAIN}": [(27017, "localhost.test.not-build.10gen.cc")],
    f"_mongodb._tcp.test16.{DOMAIN}": [(27017, "localhost.test.build.not-10gen.cc")],
    f"_mongodb._tcp.test17.{DOMAIN}": [(27017, "localhost.test.build.10gen.not-cc")],
    f"_mongodb._tcp.test18.{DOMAIN}": [(27017, f"localhost.sub.{DOMAIN}")],
    f"_mongodb._tcp.test19.{DOMAIN}": [
        (27017, "localhost.evil.build.10gen.cc"),
        (27017, LOCALHOST),
    ],
    f"_mongodb._tcp.test20.{DOMAIN}": [(27017, LOCALHOST)],
    f"_mongodb._tcp.test21.{DOMAIN}": [(27017, LOCALHOST)],
    # The README's table lists only 27017 for test22, but replica-set/srv-service-name.json
    # expects seeds on 27017 and 27018 (the live records it was written against have both).
    f"_customname._tcp.test22.{DOMAIN}": [(27017, LOCALHOST), (27018, LOCALHOST)],
    f"_mongodb._tcp.test23.{DOMAIN}": [(8000, LOCALHOST)],
    f"_mongodb._tcp.test24.{DOMAIN}": [(8000, LOCALHOST)],
}

# Each entry is one TXT record; a record is its character-strings in order.
TXT_RECORDS: dict[str, list[list[str]]] = {
    f"test5.{DOMAIN}": [["replicaSet=repl0&authSource=thisDB"]],
    f"test6.{DOMAIN}": [["replicaSet=repl0"], ["authSource=otherDB"]],
    f"test7.{DOMAIN}": [["ssl=false"]],
    f"test8.{DOMAIN}": [["authSource"]],
    f"test10.{DOMAIN}": [["socketTimeoutMS=500"]],
    f"test11.{DOMAIN}": [["replicaS", "et=rep", "l0"]],
    f"test20.{DOMAIN}": [["loadBalanced=true"]],
    f"test21.{DOMAIN}": [["loadBalanced=false"]],
    f"test24.{DOMAIN}": [["loadBalanced=true"]],
}

ALL_NAMES = set(A_RECORDS) | set(SRV_RECORDS) | set(TXT_RECORDS)


def _name_exists(name: str) -> bool:
    # an empty non-terminal (test1.test.build.10gen.cc, above its _mongodb._tcp record)
    # exists: NOERROR with no answer, as a real server says; anything else is NXDOMAIN
    return any(known == name or known.endswith("." + name) for known in ALL_NAMES)


class _ReadmeZone(BaseResolver):  # type: ignore[misc]
    def resolve(self, request: Any, handler: Any) -> Any:
        reply = request.reply()
        name = str(request.q.qname).lower().rstrip(".")
        qtype = dnslib.QTYPE[request.q.qtype]
        if not _name_exists(name):
            reply.header.rcode = dnslib.RCODE.NXDOMAIN
            return reply
        rdatas: list[Any] = []
        if qtype == "SRV":
            rdatas = [
                dnslib.SRV(port=port, target=target + ".")
                for port, target in SRV_RECORDS.get(name, [])
            ]
        elif qtype == "TXT":
            rdatas = [dnslib.TXT(strings) for strings in TXT_RECORDS.get(name, [])]
        elif qtype == "A" and name in A_RECORDS:
            rdatas = [dnslib.A(A_RECORDS[name])]
        for rdata in rdatas:
            reply.add_answer(
                dnslib.RR(name + ".", getattr(dnslib.QTYPE, qtype), rdata=rdata, ttl=TTL)
            )
        return reply


@pytest.fixture(scope="module")
def dns_port() -> Iterator[int]:
    quiet = DNSLogger("-request,-reply,-recv,-send,-log_data", False)
    server = DNSServer(_ReadmeZone(), address="127.0.0.1", port=0, logger=quiet)
    server.start_thread()
    try:
        yield int(server.server.server_address[1])
    finally:
        server.stop()
        server.server.server_close()


# -- cases -------------------------------------------------------------------------------------


def _expand(path: Path, case: Any) -> Iterable[tuple[str, Any]]:
    for runtime in RUNTIMES:
        yield runtime, {"runtime": runtime, "case": case}
    if not case.get("error") and any(key in case for key in ("hosts", "numHosts", "ping")):
        yield CLUSTER, {"runtime": None, "case": case, "folder": path.parent.name}


CASES = suite_cases(SUITE, _expand)


def _resolve(runtime: str, cs: ConnectionString, port: int) -> Seedlist:
    # srvMaxHosts draws are random by the spec; a seeded source keeps the run reproducible
    discovery = discovery_for(cs, randbelow=random.Random(0).randrange)
    servers = ["127.0.0.1"]
    if runtime == "blocking":
        return resolve_seedlist(discovery, BlockingResolver(nameservers=servers, port=port))
    if runtime == "asyncio":

        async def run_asyncio() -> Seedlist:
            resolver = AsyncioResolver(nameservers=servers, port=port)
            return await resolve_seedlist_async(discovery, resolver)

        return asyncio.run(run_asyncio())
    if not HAVE_TRIO:
        pytest.skip("trio (the trio extra) is not installed")
    import trio

    if TYPE_CHECKING:
        from transports.dns_trio import TrioResolver, resolve_seedlist_trio
    else:
        from mongo_sansio.transports.dns_trio import TrioResolver, resolve_seedlist_trio

    async def run_trio() -> Seedlist:
        return await resolve_seedlist_trio(discovery, TrioResolver(nameservers=servers, port=port))

    result: Seedlist = trio.run(run_trio)
    return result


def _discover(runtime: str, uri: str, port: int) -> tuple[Seedlist, ConnectionString]:
    cs = parse_uri(uri)
    seedlist = _resolve(runtime, cs, port)
    return seedlist, apply_seedlist(cs, seedlist)


def _option(cs: ConnectionString, name: str) -> Any:
    if name.lower() in ("ssl", "tls"):
        return cs.tls
    for key, value in cs.options.items():
        if key.lower() == name.lower():
            return value
    return "<absent>"


PARSED_OPTIONS = {
    "user": lambda cs: cs.username,
    "password": lambda cs: cs.password,
    "db": lambda cs: cs.database,
    "auth_database": lambda cs: cs.database,
    "defaultDatabase": lambda cs: cs.database,
}


def _address(address: Any) -> str:
    host, port = address
    return f"{host}:{port}"


@pytest.mark.spec
@pytest.mark.parametrize("item", CASES)
def test_initial_dns_seedlist(
    item: dict[str, Any] | None,
    dns_port: int,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert item is not None
    case, runtime = item["case"], item["runtime"]
    if runtime is None:
        _check_cluster(case, item["folder"], dns_port, request, monkeypatch)
        return
    if case.get("error"):
        with pytest.raises(ConfigurationError):
            _discover(runtime, case["uri"], dns_port)
        return

    seedlist, cs = _discover(runtime, case["uri"], dns_port)
    seeds = sorted(_address(a) for a in seedlist.hosts)
    assert sorted(_address(a) for a in cs.addresses) == seeds
    if "numSeeds" in case:
        assert len(seeds) == case["numSeeds"]
        if "seeds" in case:  # a random draw: the seeds are some of the listed ones
            assert set(seeds) <= set(case["seeds"])
    elif "seeds" in case:
        assert seeds == sorted(case["seeds"])
    for name, expected in case.get("options", {}).items():
        assert _option(cs, name) == expected, f"option {name}"
    for name, expected in case.get("parsed_options", {}).items():
        assert name in PARSED_OPTIONS, f"parsed option {name!r} is not known to this runner"
        assert PARSED_OPTIONS[name](cs) == expected, f"parsed option {name}"


# -- the cluster part --------------------------------------------------------------------------

# Every name a client reaches the members by: the A records' names and what hello reports.
SERVER_NAMES = (*A_RECORDS, ADVERTISED_HOST)
#: the README's deployment of each folder (the replica set's and the sharded cluster's share ports)
FOLDERS = ("replica-set", "load-balanced", "sharded")


class SeedlistDeployments:
    """The folders' deployments, one served at a time (started when a case of its folder first
    asks, the previous one closed then): the replica set and the sharded cluster both need
    port 27017."""

    def __init__(self, workdir: Path) -> None:
        self._workdir = workdir
        self._serving: tuple[str, contextlib.ExitStack, SeedlistCluster] | None = None

    def get(self, folder: str) -> SeedlistCluster:
        if self._serving is not None and self._serving[0] == folder:
            return self._serving[2]
        self.close()
        stack = contextlib.ExitStack()
        try:
            cluster = stack.enter_context(
                serve_seedlist_deployment(self._workdir / folder, (*SERVER_NAMES, "127.0.0.1"), folder)
            )
        except ClusterUnavailable as exc:
            pytest.skip(f"the {folder} deployment for the cluster part cannot be served: {exc}")
        self._serving = (folder, stack, cluster)
        return cluster

    def close(self) -> None:
        if self._serving is not None:
            self._serving[1].close()
            self._serving = None


@pytest.fixture(scope="module")
def seedlist_deployments(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeedlistDeployments]:
    workdir = tmp_path_factory.mktemp("dns-seedlist-cluster")
    for folder in FOLDERS:
        (workdir / folder).mkdir()
    deployments = SeedlistDeployments(workdir)
    yield deployments
    deployments.close()


def _select_a_server() -> Flow[ServerInfo]:
    """Only server selection: it discovers the deployment (this client has no background
    monitors), with no operation run."""
    server: ServerInfo = yield SelectServer()
    return server


def _unknown_credential(cs: ConnectionString) -> str | None:
    """Why the simulated replica set cannot authenticate ``cs``'s credential, if it cannot."""
    credential = cs.credential
    if credential is None:
        return None
    user, source = credential.username, credential.source
    if source == "admin" and user is not None and USERS.get(user) == credential.password:
        return None
    return (
        f"its credential (user {user!r}, authSource {source!r}) is not a user of the simulated "
        f"replica set, which knows only admin's {sorted(USERS)}; this client authenticates every "
        "connection it opens, discovery included, so the topology cannot be discovered with it"
    )


def _check_cluster(
    case: dict[str, Any],
    folder: str,
    dns_port: int,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert folder in FOLDERS, f"no cluster set-up for the {folder!r} folder"
    reason = _unknown_credential(parse_uri(case["uri"]))
    if reason is not None:
        pytest.skip(reason)
    deployments: SeedlistDeployments = request.getfixturevalue("seedlist_deployments")
    cluster = deployments.get(folder)
    monkeypatch.setattr(
        socket, "getaddrinfo", loopback_getaddrinfo(SERVER_NAMES, socket.getaddrinfo)
    )
    client = MongoClient(
        case["uri"],
        tlsCAFile=str(cluster.ca_file),
        dns_resolver=BlockingResolver(nameservers=["127.0.0.1"], port=dns_port),
        serverSelectionTimeoutMS=3000,
        connectTimeoutMS=2000,
    )
    try:
        seeds = sorted(format_address(address) for address in client.settings.seeds.addresses)
        if "numSeeds" in case:
            assert len(seeds) == case["numSeeds"]
            assert set(seeds) <= set(case.get("seeds", seeds))
        elif "seeds" in case:
            assert seeds == sorted(case["seeds"])
        # The README: ping unless ``ping`` is false (those cases carry userinfo).
        if case.get("ping", True):
            assert client.admin.command("ping")["ok"] == 1
        else:
            client.run(_select_a_server())
        hosts = sorted(format_address(address) for address in client.topology_description.servers)
        if "hosts" in case:
            assert hosts == sorted(case["hosts"])
        if "numHosts" in case:
            assert len(hosts) == case["numHosts"]
    finally:
        client.close()
