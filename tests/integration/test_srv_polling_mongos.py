"""SRV polling of mongos hosts end to end (the "Polling SRV Records for mongos Discovery" spec's
prose tests, against a served sharded cluster instead of scripted servers): a ``mongodb+srv``
client of a sharded cluster rescans the SRV records and follows them -- a mongos added is
connected, one removed is dropped, operations keep working -- and with ``srvMaxHosts`` it
keeps that many mongos, drawing a replacement for one removed.  The DNS answers come from an
in-process resolver (``dns_resolver``), whose records the test changes; the record targets
resolve to the cluster's address.  Our blocking client only: PyMongo asks the system's DNS.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mongo_sansio.adapters.blocking import MongoClient
from mongo_sansio.adapters.sim import SimulatedShardedCluster
from mongo_sansio.sdam.description import format_address
from mongo_sansio.uri.seedlist import DnsQuestion, SrvAnswer, SrvRecord, TxtAnswer

SRV_HOST = "mongos.sim.example"
TARGET = "router.sim.example"  # in the SRV host's domain, as the spec requires


class Zone:
    """An SRV record per port in :attr:`ports` (TTL 1 s), no TXT record."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports

    def ask(self, question: DnsQuestion) -> Any:
        if question.rdtype == "SRV":
            return SrvAnswer(question=question, records=tuple(SrvRecord(target=TARGET, port=p, ttl=1.0) for p in self.ports))
        return TxtAnswer(question=question, records=())


@pytest.fixture(scope="module")
def sc() -> Iterator[SimulatedShardedCluster]:
    with SimulatedShardedCluster(shards=1, mongos=3, members=1) as cluster:
        yield cluster


@pytest.fixture
def ports(sc: SimulatedShardedCluster, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The mongos ports; the record target resolves to their host."""
    host = sc.mongos[0].rsplit(":", 1)[0]
    original = socket.getaddrinfo

    def getaddrinfo(name: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        return original(host if name == TARGET else name, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return [int(address.rsplit(":", 1)[1]) for address in sc.mongos]


def _hosts(client: Any) -> set[str]:
    return {format_address(address) for address in client.topology_description.servers}


def _wait_until(condition: Callable[[], bool], seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the rescan did not come"
        time.sleep(0.05)


def _client(zone: Zone, options: str = "") -> Any:
    return MongoClient(f"mongodb+srv://{SRV_HOST}/?tls=false{options}", dns_resolver=zone,
                       rescanSRVIntervalMS=200, heartbeatFrequencyMS=500, serverSelectionTimeoutMS=5000)


def test_a_rescan_adds_and_removes_mongos(ports: list[int]) -> None:
    zone = Zone(ports[:2])
    with _client(zone) as client:
        client.admin.command("ping")
        assert _hosts(client) == {f"{TARGET}:{p}" for p in ports[:2]}
        assert client.topology_description.topology_type_name == "Sharded"
        zone.ports = ports[1:]  # one mongos gone, another added
        _wait_until(lambda: _hosts(client) == {f"{TARGET}:{p}" for p in ports[1:]})
        client.db.polled.insert_one({"x": 1})
        assert client.db.polled.count_documents({"x": 1}) >= 1


def test_srv_max_hosts_keeps_that_many_mongos_and_replaces_one_removed(ports: list[int]) -> None:
    zone = Zone(list(ports))
    with _client(zone, "&srvMaxHosts=2") as client:
        client.admin.command("ping")
        first = _hosts(client)
        assert len(first) == 2 and first <= {f"{TARGET}:{p}" for p in ports}
        removed = sorted(first)[0]
        zone.ports = [p for p in ports if f"{TARGET}:{p}" != removed]
        _wait_until(lambda: _hosts(client) == {f"{TARGET}:{p}" for p in zone.ports})
        client.admin.command("ping")
