"""SRV polling as the client core runs it (Polling SRV Records for mongos Discovery, prose tests
adapted to the scripted runtime): the background task rescans at the TTL-derived interval,
adds and removes mongos hosts, keeps the topology on DNS failure, and never polls a replica set.
"""

from __future__ import annotations

from typing import Any

from client_harness import FakeServer, Loop, make_core, standalone_hello

from mongo_sansio.client.srv_polling import SrvSource
from mongo_sansio.sdam.description import TopologyType
from mongo_sansio.uri.seedlist import (
    DnsFailure,
    DnsFailureKind,
    DnsQuestion,
    SrvAnswer,
    SrvRecord,
)

HOST = "test1.test.build.10gen.cc"
A = ("localhost.test.build.10gen.cc", 27017)
B = ("localhost.test.build.10gen.cc", 27018)
C = ("localhost.test.build.10gen.cc", 27019)


def mongos(address: tuple[str, int]) -> FakeServer:
    hello = standalone_hello()
    hello["msg"] = "isdbgrid"
    return FakeServer(address, hello)


class Dns:
    """Answers SRV questions with the current record set (or a failure)."""

    def __init__(self, *addresses: tuple[str, int]) -> None:
        self.addresses = list(addresses)
        self.fail = False
        self.questions: list[DnsQuestion] = []

    def __call__(self, question: DnsQuestion) -> Any:
        self.questions.append(question)
        if self.fail:
            return DnsFailure(question=question, kind=DnsFailureKind.TIMEOUT, reason="no answer")
        records = tuple(SrvRecord(target=h, port=p, ttl=60.0) for h, p in self.addresses)
        return SrvAnswer(question=question, records=records)


def sharded_core(dns: Dns, *servers: FakeServer, max_hosts: int = 0) -> tuple[Loop, Any]:
    loop = Loop(*servers)
    loop.dns = dns
    hosts = ",".join(f"{h}:{p}" for h, p in dns.addresses)
    core = make_core(
        loop,
        f"mongodb://{hosts}/?heartbeatFrequencyMS=10000",
        srv=SrvSource(hostname=HOST, srv_max_hosts=max_hosts, min_ttl=60.0),
    )
    return loop, core


def hosts(core: Any) -> set[tuple[str, int]]:
    return set(core.description.servers)


def test_a_rescan_adds_and_removes_mongos_hosts() -> None:
    dns = Dns(A, B)
    loop, core = sharded_core(dns, mongos(A), mongos(B), mongos(C))
    loop.run_for(5)
    assert core.description.type is TopologyType.SHARDED
    dns.addresses = [A, C]
    loop.run_for(30)
    assert hosts(core) == {A, B}, "no rescan before the 60 s interval"
    loop.run_for(40)
    assert dns.questions and dns.questions[0] == DnsQuestion(
        name=f"_mongodb._tcp.{HOST}", rdtype="SRV"
    )
    assert hosts(core) == {A, C}
    loop.run_for(5)
    assert core.description.servers[C].type.value == "Mongos", "the new host is monitored"
    core.close(loop.now)
    loop.settle()


def test_a_failed_lookup_leaves_the_hosts_and_rescans_at_heartbeat_frequency() -> None:
    dns = Dns(A, B)
    loop, core = sharded_core(dns, mongos(A), mongos(B))
    loop.run_for(5)
    dns.fail = True
    loop.run_for(60)
    assert len(dns.questions) == 1
    assert hosts(core) == {A, B}
    loop.run_for(11)
    assert len(dns.questions) == 2, "after a failure the next scan comes a heartbeat later"
    core.close(loop.now)
    loop.settle()


def test_srv_max_hosts_caps_the_hosts_added() -> None:
    dns = Dns(A)
    loop, core = sharded_core(dns, mongos(A), mongos(B), mongos(C), max_hosts=2)
    loop.run_for(5)
    dns.addresses = [A, B, C]
    loop.run_for(60)
    assert len(hosts(core)) == 2 and A in hosts(core)
    core.close(loop.now)
    loop.settle()


def test_a_replica_set_never_polls() -> None:
    dns = Dns(A)
    server = FakeServer(
        A,
        {
            **standalone_hello(),
            "setName": "rs0",
            "hosts": [f"{A[0]}:{A[1]}"],
            "me": f"{A[0]}:{A[1]}",
            "setVersion": 1,
            "secondary": False,
        },
    )
    loop, core = sharded_core(dns, server)
    loop.run_for(200)
    assert core.description.type is not TopologyType.SHARDED
    assert dns.questions == []
    assert "SRV polling" not in loop.task_names()
    core.close(loop.now)
    loop.settle()


def test_close_ends_the_polling_task() -> None:
    dns = Dns(A, B)
    loop, core = sharded_core(dns, mongos(A), mongos(B))
    loop.run_for(5)
    assert "SRV polling" in loop.task_names()
    core.close(loop.now)
    loop.settle()
    assert "SRV polling" not in loop.task_names()
    assert not loop.background_failures


def test_rescan_srv_interval_ms_lowers_the_floor() -> None:
    """rescanSRVIntervalMS (here 2 s) replaces the 60 s floor; record TTLs above it still
    count (the test's records say 60 s, so a short TTL-free answer is used)."""
    dns = Dns(A, B)
    loop = Loop(mongos(A), mongos(B), mongos(C))
    loop.dns = lambda question: SrvAnswer(
        question=question,
        records=tuple(SrvRecord(target=h, port=p) for h, p in dns.addresses),
    )
    hosts_list = ",".join(f"{h}:{p}" for h, p in dns.addresses)
    core = make_core(
        loop,
        f"mongodb://{hosts_list}/?heartbeatFrequencyMS=10000",
        srv=SrvSource(hostname=HOST, min_ttl=None, rescan_floor=2.0),
    )
    loop.run_for(1)
    dns.addresses = [A, C]
    loop.run_for(2)
    assert hosts(core) == {A, C}
    core.close(loop.now)
    loop.settle()
