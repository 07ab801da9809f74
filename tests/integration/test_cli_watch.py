"""``mongo-sansio watch``: the README's change-stream command, in-process."""

from __future__ import annotations

import re
import signal

import pytest
from integration_helpers import cli_process, next_changes

from mongo_sansio.adapters.blocking import MongoClient
from mongo_sansio.adapters.cli import main
from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.bson import extjson
from mongo_sansio.errors import AuthenticationError


def _events(text: str) -> list[dict]:
    return [extjson.loads(line) for line in text.splitlines() if line.strip()]


def test_watch_without_a_uri_runs_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["watch"]) == 0
    out, err = capsys.readouterr()
    events = _events(out)
    assert [e["operationType"] for e in events] == [
        "insert", "insert", "insert", "update", "replace", "delete",
    ]
    assert [e["documentKey"]["_id"] for e in events] == [1, 2, 3, 1, 2, 3]
    assert "simulated replica set: mongodb://" in err
    # The last event's _id is the token offered for a later run.
    token = re.search(r"--resume-after '(.*)'", err)
    assert token is not None and extjson.loads(token.group(1)) == events[-1]["_id"]


def test_watch_a_uri_then_resume_from_the_printed_token(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with SimulatedReplicaSet(members=3) as rs, MongoClient(rs.uri) as client:
        client.shop.items.insert_many([{"_id": n} for n in range(4)])
        # Nothing has been written since the stream opens: write, then read with a limit.
        first_token = None
        with client.shop.items.watch() as stream:
            client.shop.items.insert_many([{"_id": n} for n in range(10, 14)])
            first_token = stream.resume_token
        assert first_token is not None
        resume = extjson.dumps(first_token)
        assert main(["watch", rs.uri, "shop.items", "--resume-after", resume, "--limit", "2"]) == 0
        out, err = capsys.readouterr()
        assert [e["documentKey"]["_id"] for e in _events(out)] == [10, 11]
        token = re.search(r"--resume-after '(.*)'", err)
        assert token is not None
        assert main(["watch", rs.uri, "shop.items", "--resume-after", token.group(1),
                     "--limit", "2"]) == 0
        out, _ = capsys.readouterr()
        assert [e["documentKey"]["_id"] for e in _events(out)] == [12, 13]


def test_watch_with_a_uri_needs_a_namespace(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["watch", "mongodb://127.0.0.1:1/"]) == 2
    assert "name a namespace" in capsys.readouterr().err


def test_watch_reports_an_unreachable_server_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["watch", "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200", "a.b"])
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mongo-sansio watch: ")


def test_our_client_against_the_sim_command_with_users() -> None:
    """The issue's setting: ``mongo-sansio sim`` (3 members, users) in its own process, our
    client connecting with each SCRAM mechanism, then a write seen by a change stream."""
    with cli_process("sim", "--members", "3", "--auth", "ada:lovelace",
                     "--auth", "bob:s\u00e9same") as process:  # fmt: skip
        assert process.stdout is not None
        uri = process.stdout.readline().strip()
        assert uri.startswith("mongodb://ada:lovelace@"), uri
        bare = "mongodb://" + uri.split("@", 1)[1]
        for mechanism in ("SCRAM-SHA-1", "SCRAM-SHA-256"):
            with MongoClient(bare, username="bob", password="s\u00e9same",
                             authMechanism=mechanism) as client:  # fmt: skip
                assert client.admin.command("ping")["ok"] == 1
        with MongoClient(uri) as client, client.app.log.watch(max_await_time_ms=500) as stream:
            client.app.log.insert_one({"_id": "hello"})
            (event,) = next_changes(stream, 1)
            assert event["documentKey"] == {"_id": "hello"}
        with pytest.raises(AuthenticationError) as refused:
            with MongoClient(bare, username="bob", password="wrong") as client:
                client.admin.command("ping")
        assert refused.value.code == 18
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
