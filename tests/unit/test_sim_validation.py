"""Document validation on the simulated server: create/collMod options, listCollections, the
writes that are checked (insert, update, upsert, findAndModify, $out, transactions), the
levels and actions, bypassDocumentValidation, and mongod's DocumentValidationFailure shape."""

from __future__ import annotations

import uuid
from typing import Any

from sim_wire_client import Client, make_cluster

from mongo_sansio.bson import Binary, Int64

STRING_X = {"x": {"$type": "string"}}


def _options(client: Client, name: str) -> dict[str, Any]:
    reply = client.command({"listCollections": 1, "filter": {"name": name}})
    (row,) = reply["cursor"]["firstBatch"]
    return dict(row["options"])


def _write_error(reply: dict[str, Any]) -> dict[str, Any]:
    (error,) = reply["writeErrors"]
    return dict(error)


def _validated(client: Client, validator: dict[str, Any] | None = None, **options: Any) -> None:
    reply = client.command({"create": "c", "validator": validator or STRING_X, **options})
    assert reply["ok"] == 1.0, reply


def test_create_lists_the_options_it_was_given() -> None:
    client = Client(make_cluster())
    _validated(client, validationLevel="moderate", validationAction="warn")
    assert _options(client, "c") == {"validator": STRING_X, "validationLevel": "moderate", "validationAction": "warn"}
    client.command({"create": "plain"})
    assert _options(client, "plain") == {}
    # the same options again are a success; other ones are NamespaceExists
    assert client.command({"create": "c", "validator": STRING_X, "validationLevel": "moderate",
                           "validationAction": "warn"})["ok"] == 1.0
    assert client.command({"create": "c", "validator": {"y": 1}})["code"] == 48


def test_an_insert_that_fails_the_validator_is_a_write_error_121() -> None:
    client = Client(make_cluster())
    _validated(client)
    reply = client.command({"insert": "c", "documents": [{"_id": 1, "x": "ok"}, {"_id": 2, "x": 5}]})
    assert reply["n"] == 1
    error = _write_error(reply)
    assert (error["index"], error["code"], error["errmsg"]) == (1, 121, "Document failed validation")
    assert error["errInfo"] == {
        "failingDocumentId": 2,
        "details": {"operatorName": "$type", "specifiedAs": STRING_X, "reason": "type did not match",
                    "consideredValue": 5, "consideredType": "int"},
    }
    missing = _write_error(client.command({"insert": "c", "documents": [{"_id": 3}]}))
    assert missing["errInfo"]["details"]["reason"] == "field was missing"
    found = client.command({"find": "c"})["cursor"]["firstBatch"]
    assert found == [{"_id": 1, "x": "ok"}]


def test_several_clauses_are_explained_under_and() -> None:
    client = Client(make_cluster())
    _validated(client, {"a": {"$gt": 1, "$lt": 5}, "b": 2})
    error = _write_error(client.command({"insert": "c", "documents": [{"_id": 1, "a": [7, 8], "b": 2}]}))
    assert error["errInfo"]["details"] == {
        "operatorName": "$and",
        "clausesNotSatisfied": [{"index": 1, "details": {
            "operatorName": "$lt", "specifiedAs": {"a": {"$lt": 5}}, "reason": "comparison failed",
            "consideredValues": [7, 8],
        }}],
    }


def test_expr_and_or_details() -> None:
    client = Client(make_cluster())
    _validated(client, {"$or": [{"a": {"$exists": True}}, {"$expr": {"$gt": ["$b", 10]}}]})
    error = _write_error(client.command({"insert": "c", "documents": [{"_id": 1, "b": 3}]}))
    assert error["errInfo"]["details"] == {"operatorName": "$or", "clausesNotSatisfied": [
        {"index": 0, "details": {"operatorName": "$exists", "specifiedAs": {"a": {"$exists": True}},
                                 "reason": "path does not exist"}},
        {"index": 1, "details": {"operatorName": "$expr", "specifiedAs": {"$expr": {"$gt": ["$b", 10]}},
                                 "reason": "expression did not match", "expressionResult": False}},
    ]}


def test_updates_replacements_upserts_and_find_and_modify_are_checked() -> None:
    client = Client(make_cluster())
    _validated(client)
    client.command({"insert": "c", "documents": [{"_id": 1, "x": "a"}]})
    updated = client.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 1}}}]})
    assert (updated["nModified"], _write_error(updated)["code"]) == (0, 121)
    replaced = client.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"y": 1}}]})
    assert _write_error(replaced)["errInfo"]["failingDocumentId"] == 1
    upserted = client.command({"update": "c", "updates": [{"q": {"_id": 9}, "u": {"$set": {"x": 2}}, "upsert": True}]})
    assert _write_error(upserted)["errInfo"]["failingDocumentId"] == 9
    fam = client.command({"findAndModify": "c", "query": {"_id": 1}, "update": {"$set": {"x": 1}}})
    assert (fam["ok"], fam["code"], fam["codeName"]) == (0.0, 121, "DocumentValidationFailure")
    assert fam["errInfo"]["failingDocumentId"] == 1 and isinstance(fam["errInfo"]["details"], dict)
    assert client.command({"find": "c"})["cursor"]["firstBatch"] == [{"_id": 1, "x": "a"}]


def test_bypass_document_validation_skips_the_check() -> None:
    client = Client(make_cluster())
    _validated(client)
    bypass = {"bypassDocumentValidation": True}
    assert "writeErrors" not in client.command({"insert": "c", "documents": [{"_id": 1, "x": 1}], **bypass})
    assert client.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 2}}}], **bypass})["nModified"] == 1
    fam = client.command({"findAndModify": "c", "query": {"_id": 1}, "update": {"$set": {"x": 3}}, "new": True, **bypass})
    assert fam["value"] == {"_id": 1, "x": 3}
    client.command({"insert": "src", "documents": [{"_id": 5, "x": 5}]})
    refused = client.command({"aggregate": "src", "pipeline": [{"$out": "c"}], "cursor": {}})
    assert refused["code"] == 121
    out = client.command({"aggregate": "src", "pipeline": [{"$out": "c"}], "cursor": {}, **bypass})
    assert out["ok"] == 1.0
    assert client.command({"find": "c"})["cursor"]["firstBatch"] == [{"_id": 5, "x": 5}]
    # false, the default, checks
    assert _write_error(client.command({"insert": "c", "documents": [{"x": 1}], "bypassDocumentValidation": False}))["code"] == 121


def test_moderate_does_not_check_updates_of_documents_already_invalid() -> None:
    client = Client(make_cluster())
    client.command({"insert": "c", "documents": [{"_id": 1, "x": 1}, {"_id": 2, "x": "valid"}]})
    assert client.command({"collMod": "c", "validator": STRING_X, "validationLevel": "moderate"})["ok"] == 1.0
    assert _options(client, "c") == {"validator": STRING_X, "validationLevel": "moderate"}
    # the invalid document may stay invalid; the valid one may not become invalid
    assert client.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 2}}}]})["nModified"] == 1
    assert _write_error(client.command({"update": "c", "updates": [{"q": {"_id": 2}, "u": {"$set": {"x": 2}}}]}))["code"] == 121
    # inserts are always checked
    assert _write_error(client.command({"insert": "c", "documents": [{"_id": 3, "x": 3}]}))["code"] == 121
    # strict checks the update of the invalid one too; off checks nothing
    client.command({"collMod": "c", "validationLevel": "strict"})
    assert _write_error(client.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 4}}}]}))["code"] == 121
    client.command({"collMod": "c", "validationLevel": "off"})
    assert "writeErrors" not in client.command({"insert": "c", "documents": [{"_id": 3, "x": 3}]})


def test_warn_lets_the_write_through() -> None:
    cluster = make_cluster()
    client = Client(cluster)
    _validated(client, validationAction="warn")
    reply = client.command({"insert": "c", "documents": [{"_id": 1, "x": 1}]})
    assert reply["n"] == 1 and "writeErrors" not in reply
    collection = cluster.collection("test", "c")
    assert collection is not None and collection.validation is not None
    assert collection.validation.warnings == 1
    client.command({"collMod": "c", "validationAction": "error"})
    assert _write_error(client.command({"insert": "c", "documents": [{"_id": 2, "x": 2}]}))["code"] == 121


def test_collmod_replaces_and_clears_the_validator() -> None:
    client = Client(make_cluster())
    client.command({"insert": "c", "documents": [{"_id": 1, "x": "a"}]})
    assert client.command({"collMod": "c", "validator": {"n": {"$gte": 0}}})["ok"] == 1.0
    assert _write_error(client.command({"insert": "c", "documents": [{"n": -1}]}))["code"] == 121
    assert client.command({"collMod": "c", "validator": {}})["ok"] == 1.0
    assert _options(client, "c") == {}
    assert "writeErrors" not in client.command({"insert": "c", "documents": [{"n": -1}]})


def test_validation_inside_a_transaction() -> None:
    client = Client(make_cluster())
    _validated(client)
    txn = {"lsid": {"id": Binary(uuid.UUID(int=3).bytes, 4)}, "txnNumber": Int64(1), "autocommit": False}
    first = client.command({"insert": "c", "documents": [{"_id": 1, "x": 1}], "startTransaction": True, **txn})
    assert _write_error(first)["code"] == 121
    # (as in mongod, the failed write aborted the transaction)
    assert client.command({"commitTransaction": 1, **txn}, db="admin")["code"] == 251
    # a collection made in a transaction keeps its validator
    made = {"lsid": {"id": Binary(uuid.UUID(int=4).bytes, 4)}, "txnNumber": Int64(1), "autocommit": False}
    assert client.command({"create": "t", "validator": STRING_X, "startTransaction": True, **made})["ok"] == 1.0
    assert "writeErrors" not in client.command({"insert": "t", "documents": [{"x": "s"}], **made})
    assert client.command({"commitTransaction": 1, **made}, db="admin")["ok"] == 1.0
    assert _options(client, "t") == {"validator": STRING_X}
    assert _write_error(client.command({"insert": "t", "documents": [{"x": 2}]}))["code"] == 121


def test_refused_validators_and_options() -> None:
    client = Client(make_cluster())
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"validator": {"$where": "true"}}, 2, "$where is not allowed in this context"),
        ({"validator": {"$text": {"$search": "a"}}}, 2, "$text is not allowed in this context"),
        ({"validator": {"loc": {"$near": [0, 0]}}}, 2, "$geoNear, $near, and $nearSphere are not allowed in this context"),
        ({"validator": {"$or": [{"a": {"$nearSphere": [0, 0]}}]}}, 2,
         "$geoNear, $near, and $nearSphere are not allowed in this context"),
        ({"validator": {"a": {"$bogus": 1}}}, 2, "unknown operator: $bogus"),
        ({"validator": {"$bogus": 1}}, 2, "unknown top level operator: $bogus"),
        ({"validator": 5}, 14, "BSON field 'create.validator' is the wrong type 'int', expected type 'object'"),
        ({"validator": {}, "validationLevel": "sometimes"}, 2,
         "Enumeration value 'sometimes' for field 'create.validationLevel' is not a valid value."),
        ({"validator": {}, "validationAction": "shout"}, 2,
         "Enumeration value 'shout' for field 'create.validationAction' is not a valid value."),
        ({"validator": {"$jsonSchema": {"format": "email"}}}, 9, "$jsonSchema keyword 'format' is not currently supported"),
        ({"validator": {"$jsonSchema": {"colour": 1}}}, 9, "Unknown $jsonSchema keyword: colour"),
    ]
    for options, code, errmsg in cases:
        reply = client.command({"create": "c", **options})
        assert (reply["code"], reply["errmsg"]) == (code, errmsg), options
    assert client.command({"listCollections": 1})["cursor"]["firstBatch"] == []
    client.command({"create": "c"})
    assert client.command({"collMod": "c", "validator": {"$where": "1"}})["code"] == 2
    assert client.command({"collMod": "c", "validationLevel": 1})["code"] == 14
    assert client.command({"create": "v", "validator": {"a": 1}}, db="admin")["code"] == 72
    assert client.command({"collMod": "missing", "validator": {}})["code"] == 26
    client.command({"create": "view", "viewOn": "c", "pipeline": []})
    assert client.command({"collMod": "view", "validator": {}})["code"] == 72
