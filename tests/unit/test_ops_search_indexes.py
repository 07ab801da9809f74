"""The Atlas Search index helpers as flows: the commands they send (no write or read concern,
as the index-management spec says), the names they return, SearchIndexModel's document, a
drop of a missing collection as success, and argument errors."""

from __future__ import annotations

from typing import Any

import pytest
from flow_script import Step, command, cursor_reply, error_reply, run_flow

from mongo_sansio.errors import LocalProtocolError, ServerError
from mongo_sansio.flow import RunCommand, SelectServer, ServerInfo
from mongo_sansio.ops.collection import CollectionOps
from mongo_sansio.ops.search_indexes import SearchIndexModel
from mongo_sansio.ops.write_concern import ReadConcern, WriteConcern

PRIMARY = ServerInfo(("p", 27017), 21)


def collection() -> CollectionOps:
    # a collection whose concerns must NOT reach the search index commands
    return CollectionOps(
        "db",
        "coll",
        write_concern=WriteConcern(w="majority"),
        read_concern=ReadConcern("majority"),
    )


def body(step: Step) -> dict[str, Any]:
    assert isinstance(step.seen, RunCommand)
    return dict(step.seen.body)


def test_the_model_document_puts_name_definition_and_type() -> None:
    model = SearchIndexModel({"mappings": {"dynamic": True}}, name="idx", type="search")
    assert model.document == {
        "name": "idx",
        "definition": {"mappings": {"dynamic": True}},
        "type": "search",
    }
    assert SearchIndexModel({"a": 1}).document == {"definition": {"a": 1}}
    assert SearchIndexModel({"a": 1}) == SearchIndexModel({"a": 1})


def test_create_search_indexes_sends_the_documents_without_concerns_and_returns_names() -> None:
    step = command(
        "createSearchIndexes",
        {"ok": 1, "indexesCreated": [{"id": "1", "name": "a"}, {"id": "2", "name": "b"}]},
        db="db",
    )
    models = [SearchIndexModel({"x": 1}, name="a"), {"definition": {"y": 1}, "name": "b"}]
    names = run_flow(
        collection().create_search_indexes(models), Step(SelectServer, reply=PRIMARY), step
    )
    assert names == ["a", "b"]
    assert body(step) == {
        "createSearchIndexes": "coll",
        "indexes": [{"name": "a", "definition": {"x": 1}}, {"definition": {"y": 1}, "name": "b"}],
    }


def test_create_search_index_returns_the_one_name() -> None:
    step = command("createSearchIndexes", {"ok": 1, "indexesCreated": [{"name": "default"}]})
    flow = collection().create_search_index(SearchIndexModel({"x": 1}), comment="c")
    assert run_flow(flow, Step(SelectServer, reply=PRIMARY), step) == "default"
    assert body(step)["comment"] == "c"


def test_update_and_drop_send_their_commands() -> None:
    update = command("updateSearchIndex")
    run_flow(
        collection().update_search_index("i", {"x": 2}), Step(SelectServer, reply=PRIMARY), update
    )
    assert body(update) == {"updateSearchIndex": "coll", "name": "i", "definition": {"x": 2}}
    drop = command("dropSearchIndex", error_reply(26, name="NamespaceNotFound"))
    run_flow(collection().drop_search_index("i"), Step(SelectServer, reply=PRIMARY), drop)
    assert body(drop) == {"dropSearchIndex": "coll", "name": "i"}


def test_a_server_without_atlas_search_raises_its_error() -> None:
    refused = command(
        "dropSearchIndex", error_reply(31082, errmsg="needs Atlas", name="SearchNotEnabled")
    )
    with pytest.raises(ServerError) as raised:
        run_flow(collection().drop_search_index("i"), Step(SelectServer, reply=PRIMARY), refused)
    assert raised.value.code == 31082


@pytest.mark.parametrize(("name", "stage"), [(None, {}), ("i", {"name": "i"})])
def test_list_search_indexes_aggregates_without_read_concern(name: str | None, stage: Any) -> None:
    step = command("aggregate", cursor_reply([{"name": "i"}]))
    cursor = run_flow(
        collection().list_search_indexes(name, batch_size=10),
        Step(SelectServer, reply=PRIMARY),
        step,
    )
    sent = body(step)
    assert sent["pipeline"] == [{"$listSearchIndexes": stage}]
    assert sent["cursor"] == {"batchSize": 10}
    assert "readConcern" not in sent
    assert cursor.next_buffered() == {"name": "i"}


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.create_search_indexes("not a list"),
        lambda c: c.create_search_indexes([42]),
        lambda c: c.drop_search_index(3),
        lambda c: c.update_search_index("i", "not a document"),
        lambda c: c.list_search_indexes(5),
        lambda c: SearchIndexModel("not a document"),
    ],
)
def test_bad_arguments_are_type_errors(call: Any) -> None:
    with pytest.raises(TypeError) as raised:
        flow = call(collection())
        run_flow(flow, Step(SelectServer, reply=PRIMARY))
    assert isinstance(raised.value, LocalProtocolError)
