"""The simulator's load balancer front (mongo_sansio/testing/server/load_balancer.py), bytes in
and out without sockets: the hello rules of mongos' load balancer port, the routers' serviceIds,
and commands following the primary; over a sharded cluster, the mongos routers as the services
(each serviceId the router's processId, a stopped router passed over)."""

from __future__ import annotations

from typing import Any

import pytest
from sim_wire_client import MEMBERS, PRIMARY, SECONDARY, Client, make_cluster

from mongo_sansio.bson import ObjectId
from mongo_sansio.errors import LocalProtocolError
from mongo_sansio.testing.server.load_balancer import LoadBalancerFront, PrimaryRouters
from mongo_sansio.testing.sharded import ShardedCluster
from mongo_sansio.testing.sharded.cluster import MongosServices

FRONT = "127.0.0.1:27016"
MULTI = "127.0.0.1:27015"


class FrontClient(Client):
    def __init__(self, front: LoadBalancerFront, address: str = FRONT) -> None:
        self.cluster = front.cluster
        self.now = 100.0
        self.conn = front.connect(address, self.now)
        from mongo_sansio.wire import MessageReader

        self.reader = MessageReader()
        self.request_id = 0


def _front(services: int = 1, **kwargs: Any) -> LoadBalancerFront:
    cluster = make_cluster()
    return LoadBalancerFront(cluster, FRONT, PrimaryRouters(cluster, services, now=100.0), **kwargs)


def _service_ids(front: LoadBalancerFront) -> list[ObjectId]:
    assert isinstance(front.services, PrimaryRouters)
    return front.services.service_ids


def test_a_first_hello_without_load_balanced_is_refused_and_the_connection_closed() -> None:
    client = FrontClient(_front())
    reply = client.command({"hello": 1}, db="admin")
    assert (reply["ok"], reply["code"], reply["codeName"]) == (0.0, 354, "LoadBalancerSupportMismatch")
    assert "does not have load balancing enabled" in reply["errmsg"]
    assert client.conn.should_close


def test_the_first_hello_carries_the_service_id_and_answers_as_a_router() -> None:
    front = _front()
    client = FrontClient(front)
    first = client.command({"hello": 1, "loadBalanced": True}, db="admin")
    assert first["ok"] == 1.0 and first["serviceId"] == _service_ids(front)[0]
    assert isinstance(first["serviceId"], ObjectId)
    assert first["msg"] == "isdbgrid" and first["isWritablePrimary"] is True
    assert not {"setName", "hosts", "primary", "me", "secondary"} & set(first)
    second = client.command({"hello": 1}, db="admin")
    assert second["ok"] == 1.0 and "serviceId" not in second
    assert not client.conn.should_close


def test_members_stay_reachable_directly_and_answer_as_members() -> None:
    front = _front()
    client = FrontClient(front, PRIMARY)
    reply = client.command({"hello": 1}, db="admin")
    assert reply["setName"] == "rs0" and "serviceId" not in reply


def test_routers_take_the_multi_fronts_connections_in_turn() -> None:
    front = _front(services=2, multi_address=MULTI)
    ids = [
        FrontClient(front, MULTI).command({"hello": 1, "loadBalanced": True}, db="admin")["serviceId"]
        for _ in range(4)
    ]
    assert ids == _service_ids(front) * 2
    single = [
        FrontClient(front).command({"hello": 1, "loadBalanced": True}, db="admin")["serviceId"]
        for _ in range(2)
    ]
    assert single == _service_ids(front)[:1] * 2


def test_commands_follow_the_primary_across_a_stepdown() -> None:
    front = _front()
    client = FrontClient(front)
    client.command({"hello": 1, "loadBalanced": True}, db="admin")
    assert client.command({"insert": "c", "documents": [{"_id": 1}]})["ok"] == 1.0
    front.cluster.step_down(101.0, successor=SECONDARY)
    assert client.conn.member.address == PRIMARY  # not moved until its next command
    assert client.command({"insert": "c", "documents": [{"_id": 2}]})["n"] == 1
    assert client.conn.member.address == SECONDARY


def test_without_a_primary_the_front_drops_the_connection() -> None:
    front = _front()
    for member in MEMBERS[1:]:
        front.cluster.stop(member, 101.0)
    assert front.cluster.primary is None
    assert front.connect(FRONT, 102.0).should_close


def test_a_front_needs_a_service() -> None:
    with pytest.raises(LocalProtocolError):
        _front(services=0)


ROUTERS = ["127.0.0.1:27017", "127.0.0.1:27018"]


def _sharded_front() -> LoadBalancerFront:
    cluster = ShardedCluster(ROUTERS, [["127.0.0.1:27101"], ["127.0.0.1:27201"]], ["127.0.0.1:27301"], now=100.0)
    return LoadBalancerFront(cluster, FRONT, MongosServices(cluster))


def _router_id(front: LoadBalancerFront, address: str) -> ObjectId:
    assert isinstance(front.cluster, ShardedCluster)
    process_id: ObjectId = front.cluster.front(address).member(address).process_id
    return process_id


def test_over_a_sharded_cluster_the_services_are_the_routers_in_turn() -> None:
    front = _sharded_front()
    hellos = [FrontClient(front).command({"hello": 1, "loadBalanced": True}, db="admin") for _ in range(4)]
    assert [h["serviceId"] for h in hellos] == [_router_id(front, a) for a in ROUTERS] * 2
    assert all(h["msg"] == "isdbgrid" and h["isWritablePrimary"] is True for h in hellos)
    refused = FrontClient(front).command({"hello": 1}, db="admin")
    assert refused["code"] == 354


def test_a_stopped_router_is_passed_over_and_none_running_drops_the_connection() -> None:
    front = _sharded_front()
    assert isinstance(front.cluster, ShardedCluster)
    front.cluster.stop_mongos(ROUTERS[0], 101.0)
    ids = [FrontClient(front).command({"hello": 1, "loadBalanced": True}, db="admin")["serviceId"] for _ in range(3)]
    assert ids == [_router_id(front, ROUTERS[1])] * 3
    client = FrontClient(front)
    client.command({"hello": 1, "loadBalanced": True}, db="admin")
    assert client.command({"insert": "c", "documents": [{"_id": 1}]})["n"] == 1  # routed to a shard
    front.cluster.stop_mongos(ROUTERS[1], 102.0)
    assert front.connect(FRONT, 103.0).should_close
