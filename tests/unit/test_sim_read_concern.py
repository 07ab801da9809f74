"""The simulated members honour a read's afterClusterTime as mongod does: a lagging secondary
holds the read until it has applied that optime (or until maxTimeMS)."""

from __future__ import annotations

from sim_wire_client import SECONDARY, Client, make_cluster

LAG = 5.0


def _written(seconds_later: float = 0.0) -> tuple[Client, Client, object]:
    cluster = make_cluster()
    primary = Client(cluster)
    cluster.set_lag(SECONDARY, LAG)
    primary.advance(60)
    reply = primary.command({"insert": "c", "documents": [{"_id": 1}]})
    secondary = Client(cluster, SECONDARY, now=primary.now + seconds_later)
    return primary, secondary, reply["operationTime"]


def _find(after: object, **fields: object) -> dict[str, object]:
    concern = {"level": "majority", "afterClusterTime": after}
    return {"find": "c", "readConcern": concern, "$readPreference": {"mode": "secondaryPreferred"}, **fields}


def test_a_lagging_secondary_holds_a_read_until_it_applied_the_time() -> None:
    _, secondary, after = _written()
    secondary.send(_find(after))
    assert secondary.messages() == []  # not applied yet: the read waits
    secondary.advance(LAG - 0.5)
    assert secondary.messages() == []
    secondary.advance(1.0)
    (reply,) = secondary.messages()
    assert reply.body["ok"] == 1.0
    assert [doc["_id"] for doc in reply.body["cursor"]["firstBatch"]] == [1]


def test_the_wait_ends_at_max_time_ms() -> None:
    _, secondary, after = _written()
    secondary.send(_find(after, maxTimeMS=1000))
    assert secondary.messages() == []
    secondary.advance(1.0)
    (reply,) = secondary.messages()
    assert (reply.body["ok"], reply.body["code"]) == (0.0, 50)


def test_no_wait_once_applied_or_on_the_primary() -> None:
    primary, secondary, after = _written(seconds_later=LAG + 1)
    assert secondary.command(_find(after))["ok"] == 1.0
    assert primary.command({**_find(after), "$readPreference": {"mode": "primary"}})["ok"] == 1.0
