"""Options ``comment``, ``allowDiskUse`` and ``readPreference``: every command the source sends
carries the comment, batch reads the allowDiskUse flag, and reads go where the read preference
says.  The source's own functions run here in-process (no Spark session), their clients made by
the real ``open_client`` with a command listener added, so each command can be looked at."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
import pyarrow as pa  # noqa: E402

from mongo_sansio import monitoring  # noqa: E402
from mongo_sansio.adapters.blocking import MongoClient  # noqa: E402
from mongo_sansio.adapters.sim import SimulatedReplicaSet  # noqa: E402
from mongo_sansio.adapters.spark import batch, clients, stream, write  # noqa: E402
from mongo_sansio.adapters.spark.errors import MongoDataSourceError  # noqa: E402
from mongo_sansio.adapters.spark.options import parse_options  # noqa: E402


class Recorder(monitoring.CommandListener):
    def __init__(self) -> None:
        self.commands: list[monitoring.CommandStartedEvent] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.commands.append(event)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@pytest.fixture(scope="module")
def rs() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=3) as replica_set:
        with MongoClient(replica_set.uri) as client:
            client.db.items.insert_many([{"_id": n, "qty": n % 7} for n in range(400)])
        yield replica_set


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    recorder = Recorder()
    real = batch.open_client

    def listened(options: Any) -> Any:
        client = real(options)
        kwargs = {**options.client_options(), "event_listeners": [recorder]}
        client.close()
        return MongoClient(options.uri, **kwargs)

    monkeypatch.setattr(batch, "open_client", listened)
    monkeypatch.setattr(stream, "open_client", listened)
    monkeypatch.setattr(clients, "open_client", listened)
    clients.close_kept_clients()  # the executors' kept clients: made afresh, with the listener
    yield recorder
    clients.close_kept_clients()


def _options(rs: SimulatedReplicaSet, **extra: str) -> Any:
    return parse_options({"uri": rs.uri, "database": "db", "collection": "items", **extra})


def _sent(recorder: Recorder, *names: str) -> list[Any]:
    return [e for e in recorder.commands if e.command_name in names]


def test_batch_reads_carry_comment_and_allow_disk_use(rs: SimulatedReplicaSet, recorded: Recorder) -> None:
    options = _options(rs, comment="nightly export", allowDiskUse="true", partitions="3",
                       sampleSize="50")
    batch.infer(options)
    filters = batch.plan_partitions(options)
    schema, tree = batch.infer(options)
    reader = batch.MongoBatchReader(options, schema, tree)
    rows = 0
    for index, partition in enumerate(reader.partitions()):
        rows += sum(b.num_rows for b in reader.read(partition))
        assert index < len(filters)
    assert rows == 400
    sent = _sent(recorded, "aggregate", "find", "getMore")
    assert {e.command_name for e in sent} >= {"aggregate", "find"}
    assert all(e.command.get("comment") == "nightly export" for e in sent)
    reads = [e for e in sent if e.command_name in ("aggregate", "find")]
    sampled = [e for e in reads if "$sample" in str(e.command.get("pipeline"))]
    assert sampled and all(e.command.get("allowDiskUse") is True for e in sampled)
    assert all(e.command.get("allowDiskUse") is True for e in reads if e.command_name == "find")


def test_a_pipeline_read_carries_them_too(rs: SimulatedReplicaSet, recorded: Recorder) -> None:
    options = _options(rs, comment="c1", allowDiskUse="false", partitions="1",
                       pipeline='[{"$match": {"qty": 3}}]')
    schema, tree = batch.infer(options)
    reader = batch.MongoBatchReader(options, schema, tree)
    got = [row for p in reader.partitions() for b in reader.read(p) for row in b.to_pylist()]
    assert len(got) == len([n for n in range(400) if n % 7 == 3])
    aggregates = _sent(recorded, "aggregate")
    assert aggregates and all(e.command.get("comment") == "c1" for e in aggregates)
    assert all(e.command.get("allowDiskUse") is False for e in aggregates)


def test_reads_follow_the_read_preference(rs: SimulatedReplicaSet, recorded: Recorder) -> None:
    # "secondary", not "secondaryPreferred": a fresh client may not know a secondary yet, and
    # secondaryPreferred then rightly reads from the primary (a race this test must not have)
    options = _options(rs, readPreference="secondary", partitions="1")
    schema, tree = batch.infer(options)
    reader = batch.MongoBatchReader(options, schema, tree)
    assert sum(b.num_rows for p in reader.partitions() for b in reader.read(p)) == 400
    reads = _sent(recorded, "aggregate", "find")
    primary = rs.primary
    assert reads and all(f"{e.connection_id[0]}:{e.connection_id[1]}" != primary for e in reads)
    assert all(e.command["$readPreference"]["mode"] == "secondary" for e in reads)


def test_stream_commands_and_writes_carry_the_comment(rs: SimulatedReplicaSet, recorded: Recorder) -> None:
    options = _options(rs, comment="cdc")
    stream._current_position(options)
    changes = _sent(recorded, "aggregate")
    assert changes and all(e.command.get("comment") == "cdc" for e in changes)
    writer_options = _options(rs, comment="cdc-write", collection="copies")
    table = pa.table({"_id": [1, 2, 3], "v": ["a", "b", "c"]})
    # write_rows uses the worker's kept client, made by open_client (recorded)
    summary = write.write_rows(writer_options, iter(table.to_batches()))
    assert summary.rows == 3
    with MongoClient(rs.uri) as client:
        assert client.db.copies.count_documents({}) == 3
    writes = _sent(recorded, "update", "insert")
    assert writes and all(e.command.get("comment") == "cdc-write" for e in writes)


@pytest.mark.parametrize(
    ("option", "value"), [("readPreference", "sometimes"), ("allowDiskUse", "yes")]
)
def test_bad_values_are_named(rs: SimulatedReplicaSet, option: str, value: str) -> None:
    with pytest.raises(MongoDataSourceError, match=option):
        _options(rs, **{option: value})
