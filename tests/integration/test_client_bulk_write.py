"""``MongoClient.bulk_write`` against the simulator answering as mongod 8.0: the CRUD prose tests
of the client bulk write (source/crud/tests/README.md, 3 to 16) that need documents too large
for the unified format, and the same getMore scenario on the async runtimes.

Each test reads the limits from ``hello`` as the prose says (the simulator reports mongod's:
maxWriteBatchSize 100,000, maxBsonObjectSize 16 MiB, maxMessageSizeBytes 48,000,000).  Prose
test 10 was removed from the spec, 13 too; 14 is about explain.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from async_kit import KITS, Kit
from integration_helpers import fail_once

import mongo_sansio.adapters.asyncio as asyncio_client
import mongo_sansio.adapters.trio as trio_client
from mongo_sansio import monitoring
from mongo_sansio.adapters.blocking import (
    DeleteOne,
    InsertOne,
    MongoClient,
    UpdateOne,
    WriteConcern,
)
from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.errors import (
    ClientBulkWriteException,
    DocumentTooLarge,
    InvalidOperation,
    LocalProtocolError,
    OperationFailure,
)
from mongo_sansio.monitoring import CommandStartedEvent

NS = "db.coll"
# connectTimeoutMS (the monitors' hello timeout) stays at its 20 s default: the simulator takes
# seconds over 100,000 ops, and a monitor whose hello it answers late would interrupt the
# bulkWrite's connection (mongod answers hello while it writes)
OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000}


class Commands(monitoring.CommandListener):
    """Records the commands a client starts."""

    def __init__(self) -> None:
        self.events: list[CommandStartedEvent] = []

    def started(self, event: CommandStartedEvent) -> None:
        self.events.append(event)

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        pass

    def named(self, name: str) -> list[CommandStartedEvent]:
        return [event for event in self.events if event.command_name == name]


@pytest.fixture
def rs80() -> Iterator[SimulatedReplicaSet]:
    """A one-member replica set answering as mongod 8.0 (the bulkWrite command's server)."""
    with SimulatedReplicaSet(members=1, max_wire_version=25) as replica_set:
        yield replica_set


def open_client(
    clients: list[Any], uri: str, **options: Any
) -> tuple[MongoClient, Commands, dict[str, Any]]:
    commands = Commands()
    client = MongoClient(uri, event_listeners=[commands], **{**OPTIONS, **options})
    clients.append(client)
    hello = dict(client.admin.command("hello"))
    client.db.coll.drop()
    commands.events.clear()
    return client, commands, hello


def test_3_splits_more_than_max_write_batch_size_ops(
    rs80: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands, hello = open_client(clients, rs80.uri)
    count = hello["maxWriteBatchSize"] + 1
    result = client.bulk_write([InsertOne({"a": "b"}, namespace=NS) for _ in range(count)])
    assert result.inserted_count == count
    first, second = commands.named("bulkWrite")
    assert (len(first.command["ops"]), len(second.command["ops"])) == (count - 1, 1)
    assert first.operation_id == second.operation_id


def test_4_splits_ops_over_max_message_size_bytes(
    rs80: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands, hello = open_client(clients, rs80.uri)
    document = {"a": "b" * (hello["maxBsonObjectSize"] - 500)}
    count = hello["maxMessageSizeBytes"] // hello["maxBsonObjectSize"] + 1
    result = client.bulk_write([InsertOne(dict(document), namespace=NS) for _ in range(count)])
    assert result.inserted_count == count
    first, second = commands.named("bulkWrite")
    assert (len(first.command["ops"]), len(second.command["ops"])) == (count - 1, 1)
    assert first.operation_id == second.operation_id


def test_5_collects_write_concern_errors_across_batches(
    rs80: SimulatedReplicaSet, clients: list[Any]
) -> None:
    # Code 91 (ShutdownInProgress) is a state change: the primary is marked unknown and its
    # pool cleared after the first batch, and the second waits for the monitor to find it
    # again -- its next check, heartbeatFrequencyMS away (the fail point changes nothing the
    # streaming hello would report sooner)
    client, commands, hello = open_client(
        clients, rs80.uri, retryWrites=False, heartbeatFrequencyMS=500
    )
    primary = rs80.primary
    assert primary is not None
    rs80.configure_failpoint(
        primary,
        {
            "configureFailPoint": "failCommand",
            "mode": {"times": 2},
            "data": {
                "failCommands": ["bulkWrite"],
                "writeConcernError": {"code": 91, "errmsg": "Replication is being shut down"},
            },
        },
    )
    count = hello["maxWriteBatchSize"] + 1
    with pytest.raises(ClientBulkWriteException) as raised:
        client.bulk_write([InsertOne({"a": "b"}, namespace=NS) for _ in range(count)])
    # (the message names a top-level error and the write errors, should there be any)
    assert len(raised.value.write_concern_errors) == 2, str(raised.value)
    assert raised.value.partial_result is not None
    assert raised.value.partial_result.inserted_count == count
    assert len(commands.named("bulkWrite")) == 2


@pytest.mark.parametrize(("ordered", "errors", "commands_sent"), [(False, None, 2), (True, 1, 1)])
def test_6_handles_write_errors_across_batches(
    rs80: SimulatedReplicaSet,
    clients: list[Any],
    ordered: bool,
    errors: int | None,
    commands_sent: int,
) -> None:
    client, commands, hello = open_client(clients, rs80.uri)
    client.db.coll.insert_one({"_id": 1})
    commands.events.clear()
    count = hello["maxWriteBatchSize"] + 1
    with pytest.raises(ClientBulkWriteException) as raised:
        client.bulk_write(
            [InsertOne({"_id": 1}, namespace=NS) for _ in range(count)], ordered=ordered
        )
    assert len(raised.value.write_errors) == (count if errors is None else errors)
    assert len(commands.named("bulkWrite")) == commands_sent


def _two_large_upserts(hello: dict[str, Any]) -> list[Any]:
    half = hello["maxBsonObjectSize"] // 2
    return [
        UpdateOne({"_id": letter * half}, {"$set": {"x": 1}}, upsert=True, namespace=NS)
        for letter in "ab"
    ]


def test_7_reads_the_results_cursor_with_get_more(
    rs80: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands, hello = open_client(clients, rs80.uri)
    result = client.bulk_write(_two_large_upserts(hello), verbose_results=True)
    assert result.upserted_count == 2
    assert len(result.update_results) == 2
    assert commands.named("getMore")


def test_8_reads_the_results_cursor_with_get_more_in_a_transaction(
    rs80: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands, hello = open_client(clients, rs80.uri)
    with client.start_session() as session:
        with session.start_transaction():
            result = client.bulk_write(
                _two_large_upserts(hello), session=session, verbose_results=True
            )
    assert result.upserted_count == 2
    assert len(result.update_results) == 2
    (get_more,) = commands.named("getMore")
    assert get_more.command["autocommit"] is False and "txnNumber" in get_more.command
    assert client.db.coll.count_documents({}) == 2  # committed


def test_9_a_failed_get_more_is_a_top_level_error(
    rs80: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands, hello = open_client(clients, rs80.uri)
    fail_once(rs80, "getMore", errorCode=8)
    with pytest.raises(ClientBulkWriteException) as raised:
        client.bulk_write(_two_large_upserts(hello), verbose_results=True)
    top_level = raised.value.error
    assert isinstance(top_level, OperationFailure) and top_level.code == 8
    partial = raised.value.partial_result
    assert partial is not None
    assert partial.upserted_count == 2
    assert len(partial.update_results) == 1
    assert commands.named("getMore")
    assert commands.named("killCursors")


def _filling_models(hello: dict[str, Any]) -> list[Any]:
    """Prose test 11's set-up: ops that leave room for one more op, not for a new nsInfo."""
    max_bson, max_message = hello["maxBsonObjectSize"], hello["maxMessageSizeBytes"]
    ops_bytes = max_message - 1122
    count, remainder = divmod(ops_bytes, max_bson)
    models = [InsertOne({"a": "b" * (max_bson - 57)}, namespace=NS) for _ in range(count)]
    if remainder >= 217:
        models.append(InsertOne({"a": "b" * (remainder - 57)}, namespace=NS))
    return models


@pytest.mark.parametrize("new_namespace", [False, True])
def test_11_a_new_namespace_that_does_not_fit_splits_the_batch(
    rs80: SimulatedReplicaSet, clients: list[Any], new_namespace: bool
) -> None:
    client, commands, hello = open_client(clients, rs80.uri)
    models = _filling_models(hello)
    count = len(models)
    namespace = "db." + "c" * 200 if new_namespace else NS
    models.append(InsertOne({"a": "b"}, namespace=namespace))
    result = client.bulk_write(models)
    assert result.inserted_count == count + 1
    events = commands.named("bulkWrite")
    if not new_namespace:
        (event,) = events
        assert len(event.command["ops"]) == count + 1
        assert event.command["nsInfo"] == [{"ns": NS}]
        return
    first, second = events
    assert len(first.command["ops"]) == count and first.command["nsInfo"] == [{"ns": NS}]
    assert len(second.command["ops"]) == 1 and second.command["nsInfo"] == [{"ns": namespace}]


@pytest.mark.parametrize("too_large", ["document", "namespace"])
def test_12_an_op_that_fits_no_message_is_a_client_error(
    rs80: SimulatedReplicaSet, clients: list[Any], too_large: str
) -> None:
    client, commands, hello = open_client(clients, rs80.uri)
    size = hello["maxMessageSizeBytes"]
    if too_large == "document":
        model = InsertOne({"a": "b" * size}, namespace=NS)
    else:
        model = InsertOne({"a": "b"}, namespace="db." + "c" * size)
    with pytest.raises(DocumentTooLarge) as raised:
        client.bulk_write([model])
    assert isinstance(raised.value, LocalProtocolError)  # a client error, no partial result
    assert not commands.named("bulkWrite")


def test_15_unacknowledged_batches_all_carry_w_0(
    rs80: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands, hello = open_client(clients, rs80.uri)
    client.db.command("create", "coll")
    commands.events.clear()
    per_message = hello["maxMessageSizeBytes"] // hello["maxBsonObjectSize"]
    document = {"a": "b" * (hello["maxBsonObjectSize"] - 500)}
    models = [InsertOne(dict(document), namespace=NS) for _ in range(per_message + 1)]
    result = client.bulk_write(models, ordered=False, write_concern=WriteConcern(w=0))
    assert not result.acknowledged
    first, second = commands.named("bulkWrite")
    assert (len(first.command["ops"]), len(second.command["ops"])) == (per_message, 1)
    assert first.operation_id == second.operation_id
    assert first.command["writeConcern"] == second.command["writeConcern"] == {"w": 0}
    assert client.db.coll.count_documents({}) == per_message + 1


def test_16_generated_ids_are_the_first_field(
    rs80: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands, _ = open_client(clients, rs80.uri)
    client.db.coll.insert_one({"x": 1})
    client.bulk_write([InsertOne({"x": 2}, namespace=NS)])
    client.db.coll.bulk_write([InsertOne({"x": 3})])
    insert, collection_bulk = commands.named("insert")
    (client_bulk,) = commands.named("bulkWrite")
    assert next(iter(insert.command["documents"][0])) == "_id"
    assert next(iter(client_bulk.command["ops"][0]["document"])) == "_id"
    assert next(iter(collection_bulk.command["documents"][0])) == "_id"


def test_mixed_namespaces_and_verbose_results(
    rs80: SimulatedReplicaSet, clients: list[Any]
) -> None:
    client, commands, _ = open_client(clients, rs80.uri)
    document: dict[str, Any] = {"x": 1}
    result = client.bulk_write(
        [
            InsertOne(document, namespace="db.one"),
            InsertOne({"_id": 2}, namespace="other.two"),
            UpdateOne({"_id": 2}, {"$set": {"y": 1}}, namespace="other.two"),
            DeleteOne({"x": 1}, namespace="db.one"),
        ],
        verbose_results=True,
    )
    assert result.insert_results[0].inserted_id == document["_id"]
    assert result.update_results[2].modified_count == 1
    assert result.delete_results[3].deleted_count == 1
    (event,) = commands.named("bulkWrite")
    assert event.database_name == "admin"
    assert event.command["nsInfo"] == [{"ns": "db.one"}, {"ns": "other.two"}]
    assert client.other.two.find_one() == {"_id": 2, "y": 1}


def test_a_server_before_8_0_is_refused(rs: SimulatedReplicaSet, clients: list[Any]) -> None:
    client = MongoClient(rs.uri, **OPTIONS)
    clients.append(client)
    with pytest.raises(InvalidOperation, match="8.0"):
        client.bulk_write([InsertOne({}, namespace=NS)])


# -- the async runtimes -------------------------------------------------------------------------

ASYNC_MODULES = {"asyncio": asyncio_client, "trio": trio_client}


@pytest.mark.parametrize(
    "kit",
    [
        pytest.param(
            kit,
            id=kit.name,
            marks=pytest.mark.skipif(not kit.available, reason=f"{kit.name} is not installed"),
        )
        for kit in KITS
    ],
)
def test_async_clients_read_the_results_cursor_and_raise_the_same_errors(
    rs80: SimulatedReplicaSet, kit: Kit
) -> None:
    async def main() -> None:
        commands = Commands()
        client_class = ASYNC_MODULES[kit.family].AsyncMongoClient
        async with client_class(rs80.uri, event_listeners=[commands], **OPTIONS) as client:
            hello = await client.admin.command("hello")
            await client.db.coll.drop()
            result = await client.bulk_write(_two_large_upserts(hello), verbose_results=True)
            assert result.upserted_count == 2 and len(result.update_results) == 2
            assert commands.named("getMore")
            with pytest.raises(ClientBulkWriteException) as raised:
                await client.bulk_write(
                    [InsertOne({"_id": 1}, namespace=NS), InsertOne({"_id": 1}, namespace=NS)]
                )
            assert [error["idx"] for error in raised.value.write_errors] == [1]
            assert raised.value.partial_result is not None

    kit.run(main)
