"""The simulated server's Stable API checks: apiVersion, apiStrict, apiDeprecationErrors, and the
parameters a getMore or a transaction's later command must repeat."""

from __future__ import annotations

import uuid
from typing import Any

from sim_wire_client import Client, make_cluster

from mongo_sansio.bson import Binary, Int64

V1 = {"apiVersion": "1"}
STRICT = {"apiVersion": "1", "apiStrict": True}


def _error(reply: dict[str, Any]) -> tuple[Any, ...]:
    return reply["ok"], reply["code"], reply["codeName"]


def test_declarations_are_checked_before_anything_else() -> None:
    client = Client(make_cluster())
    assert client.command({"ping": 1, **V1})["ok"] == 1.0
    assert client.command({"ping": 1})["ok"] == 1.0
    for extra in ({"apiStrict": True}, {"apiDeprecationErrors": False}):
        reply = client.command({"ping": 1, **extra})
        assert _error(reply) == (0.0, 4886600, "Location4886600")
        assert reply["errmsg"] == "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion"
    unknown = client.command({"ping": 1, "apiVersion": "server_will_never_support_this_api_version"})
    assert _error(unknown) == (0.0, 322, "APIVersionError") and unknown["errmsg"] == 'API version must be "1"'
    assert client.command({"ping": 1, "apiVersion": "2"})["errmsg"] == "Cannot accept API version 2"
    typed = client.command({"ping": 1, "apiVersion": 1})
    assert _error(typed) == (0.0, 14, "TypeMismatch")
    assert typed["errmsg"] == "BSON field 'APIParametersFromClient.apiVersion' is the wrong type 'int', expected type 'string'"
    # an unknown command is unknown first
    assert client.command({"frobnicate": 1, "apiVersion": "3"})["code"] == 59


def test_strict_refuses_commands_and_stages_outside_version_1() -> None:
    client = Client(make_cluster())
    client.command({"insert": "c", "documents": [{"x": 1}], **STRICT})
    distinct = client.command({"distinct": "c", "key": "x", **STRICT})
    assert _error(distinct) == (0.0, 323, "APIStrictError")
    assert distinct["errmsg"].startswith("Provided apiStrict:true, but the command distinct is not in API Version 1.")
    assert client.command({"distinct": "c", "key": "x", **V1})["values"] == [1]
    assert client.command({"isMaster": 1, **STRICT})["code"] == 323
    assert client.command({"findandmodify": "c", "query": {}, "update": {"$set": {"y": 1}}, **STRICT})["ok"] == 1.0
    assert client.command({"testVersion2": 1, **STRICT})["errmsg"].startswith(
        "Provided apiStrict:true, but the command testVersion2 is not in API Version 1."
    )
    echoed = client.command({"testVersions1And2": 1, **STRICT})
    assert (echoed["ok"], echoed["apiVersion"], echoed["apiStrict"]) == (1.0, "1", True)
    stage = client.command({"aggregate": 1, "pipeline": [{"$listLocalSessions": {}}], "cursor": {}, **STRICT})
    assert _error(stage) == (0.0, 323, "APIStrictError")
    assert stage["errmsg"] == "$listLocalSessions is not allowed with 'apiStrict: true' in API Version 1"
    nested = [{"$lookup": {"from": "c", "as": "a", "pipeline": [{"$currentOp": {}}]}}]
    assert client.command({"aggregate": "c", "pipeline": nested, "cursor": {}, **STRICT})["code"] == 323
    stats = client.command({"aggregate": "c", "pipeline": [{"$collStats": {"storageStats": {}}}], "cursor": {}, **STRICT})
    assert stats["errmsg"] == "only the 'count' option to $collStats is supported in API Version 1"


def test_deprecation_errors() -> None:
    client = Client(make_cluster())
    deprecated = client.command({"testDeprecation": 1, "apiVersion": "1", "apiDeprecationErrors": True})
    assert _error(deprecated) == (0.0, 324, "APIDeprecationError")
    assert deprecated["errmsg"] == (
        "Provided apiDeprecationErrors:true, but the command testDeprecation is deprecated in API Version 1"
    )
    assert client.command({"testDeprecation": 1, **V1})["ok"] == 1.0
    assert client.command({"testDeprecationInVersion2": 1, "apiVersion": "1", "apiDeprecationErrors": True})["ok"] == 1.0


def test_get_more_repeats_the_cursor_parameters() -> None:
    client = Client(make_cluster())
    client.command({"insert": "c", "documents": [{"_id": i} for i in range(5)]})
    cursor_id = client.command({"find": "c", "batchSize": 1, **V1})["cursor"]["id"]
    mismatch = client.command({"getMore": Int64(cursor_id), "collection": "c", "batchSize": 1, **STRICT})
    assert _error(mismatch) == (0.0, 325, "APIMismatchError")
    assert mismatch["errmsg"] == (
        'API parameter mismatch: getMore used params { apiVersion: "1", apiStrict: true }, '
        'the cursor-creating command used { apiVersion: "1" }'
    )
    assert client.command({"getMore": Int64(cursor_id), "collection": "c", "batchSize": 1})["code"] == 325
    more = client.command({"getMore": Int64(cursor_id), "collection": "c", "batchSize": 1, **V1})
    assert more["cursor"]["nextBatch"] == [{"_id": 1}]


def test_a_transaction_repeats_its_first_command_parameters() -> None:
    client = Client(make_cluster())
    client.command({"insert": "c", "documents": [{"_id": 0}]})
    lsid = {"id": Binary(uuid.UUID(int=9).bytes, 4)}
    txn = {"lsid": lsid, "txnNumber": Int64(1), "autocommit": False}
    first = client.command({"insert": "c", "documents": [{"_id": 1}], "startTransaction": True, **txn, **STRICT})
    assert first["ok"] == 1.0
    mismatch = client.command({"find": "c", **txn, **V1})
    assert _error(mismatch) == (0.0, 325, "APIMismatchError")
    assert mismatch["errmsg"] == (
        'API parameter mismatch: find used params { apiVersion: "1" }, the transaction\'s first command '
        'used { apiVersion: "1", apiStrict: true }'
    )
    assert client.command({"find": "c", **txn, **STRICT})["ok"] == 1.0
    assert client.command({"commitTransaction": 1, **txn, **STRICT}, db="admin")["ok"] == 1.0
    # once the transaction has ended its parameters no longer bind the session
    assert client.command({"commitTransaction": 1, **txn}, db="admin")["ok"] == 1.0
