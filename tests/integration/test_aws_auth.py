"""MONGODB-AWS against the simulator (which checks SigV4 signatures as STS does), on every
runtime, with credentials from each source the auth spec lists; PyMongo with
pymongo-auth-aws as the reference peer.

The credential services are :mod:`aws_fakes` on loopback, reached through the standard
overrides (``AWS_ENDPOINT_URL_STS``, ``AWS_CONTAINER_CREDENTIALS_FULL_URI``,
``AWS_EC2_METADATA_SERVICE_ENDPOINT``).  Covered: URI credentials (with and without a session
token), environment variables, web identity through a fake STS, the ECS full URI with its
authorization token, IMDSv2 with its session token, caching (one fetch for many connections),
an expiring credential fetched again, a cached credential refused after the keys rotated
(dropped and fetched again, the conversation retried once), a bad secret refused (18), a
credentials service that is down (a clear error, no server blamed).
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from aws_fakes import FakeAws
from runtime_round_trip import RUNTIMES, round_trip

from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.auth.aws_credentials import ENVIRONMENT_VARIABLES
from mongo_sansio.errors import MongoError

LONG_TERM = ("AKIDLONGTERM", "long/term+secret")
TEMPORARY = ("ASIATEMPORARY", "temporary/secret", "FwoGZXIvYXdzEJr//////////wEaDAbc+tok=")
ROTATED = ("ASIAROTATED", "rotated-secret", "IQoJb3JpZ2luX2VjEPr//rotated")
OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 3000, "connectTimeoutMS": 3000}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No AWS_* variable of the machine running the tests leaks into them."""
    for name in ENVIRONMENT_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def rs() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=1, aws=[LONG_TERM, TEMPORARY]) as replica_set:
        yield replica_set


def no_credentials_uri(rs: SimulatedReplicaSet) -> str:
    return f"{rs.uri}&authMechanism=MONGODB-AWS"


def connect(runtime: str, uri: str, **options: Any) -> Any:
    return round_trip(runtime, uri, **{**OPTIONS, **options})


def count_conversations(rs: SimulatedReplicaSet) -> list[int]:
    """A list whose length is the number of MONGODB-AWS conversations the simulator starts."""
    started: list[int] = []
    authenticator = rs.cluster.authenticator
    original = authenticator.start

    def counting(*args: Any) -> Any:
        started.append(1)
        return original(*args)

    authenticator.start = counting  # type: ignore[method-assign]
    return started


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_uri_credentials(runtime: str, rs: SimulatedReplicaSet) -> None:
    assert connect(runtime, rs.uri_with_aws(0)) == {"_id": runtime}
    assert connect(runtime, rs.uri_with_aws(1)) == {"_id": runtime}  # with AWS_SESSION_TOKEN


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_bad_secret_is_refused(runtime: str, rs: SimulatedReplicaSet) -> None:
    uri = rs.uri_with_aws(0).replace(quote(LONG_TERM[1], safe=""), "not-the-secret")
    with pytest.raises(MongoError) as caught:
        connect(runtime, uri, serverSelectionTimeoutMS=1000)
    assert "AuthenticationFailed" in str(caught.value) or "code 18" in str(caught.value)
    assert "not-the-secret" not in str(caught.value)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_environment_variables(
    runtime: str, rs: SimulatedReplicaSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", TEMPORARY[0])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", TEMPORARY[1])
    monkeypatch.setenv("AWS_SESSION_TOKEN", TEMPORARY[2])
    assert connect(runtime, no_credentials_uri(rs)) == {"_id": runtime}
    monkeypatch.setenv("AWS_SESSION_TOKEN", "a-token-sts-never-issued")
    with pytest.raises(MongoError):
        connect(runtime, no_credentials_uri(rs), serverSelectionTimeoutMS=800)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_web_identity_through_a_fake_sts(
    runtime: str, rs: SimulatedReplicaSet, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    with FakeAws(TEMPORARY) as fake:
        token_file.write_text(fake.web_token + "\n")
        monkeypatch.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(token_file))
        monkeypatch.setenv("AWS_ROLE_ARN", fake.role_arn)
        monkeypatch.setenv("AWS_ROLE_SESSION_NAME", "my-session")
        monkeypatch.setenv("AWS_ENDPOINT_URL_STS", fake.url + "/sts/")
        assert connect(runtime, no_credentials_uri(rs)) == {"_id": runtime}
        assert ("POST", "/sts/") in fake.requests
        assert fake.forms[0]["RoleSessionName"] == ["my-session"]
        assert fake.forms[0]["Version"] == ["2011-06-15"]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_ecs_full_uri(runtime: str, rs: SimulatedReplicaSet, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeAws(TEMPORARY, ecs_authorization="ecs-secret-token") as fake:
        monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", fake.url + "/ecs/credentials")
        monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ecs-secret-token")
        assert connect(runtime, no_credentials_uri(rs)) == {"_id": runtime}
        assert fake.requests == [("GET", "/ecs/credentials")]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_ec2_imdsv2(runtime: str, rs: SimulatedReplicaSet, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeAws(TEMPORARY) as fake:
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", fake.url)
        assert connect(runtime, no_credentials_uri(rs)) == {"_id": runtime}
        assert fake.requests == [
            ("PUT", "/latest/api/token"),
            ("GET", "/latest/meta-data/iam/security-credentials/"),
            ("GET", "/latest/meta-data/iam/security-credentials/sim-role"),
        ]


def three_connections(rs: SimulatedReplicaSet, uri: str) -> None:
    """One client authenticating at least three connections (minPoolSize, one at a time)."""
    from mongo_sansio.adapters.blocking import MongoClient

    started = count_conversations(rs)
    with MongoClient(uri, minPoolSize=3, maxConnecting=1, **OPTIONS) as client:
        client.admin.command("ping")
        deadline = time.monotonic() + 5
        while len(started) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert len(started) >= 3


def test_fetched_credentials_are_cached_until_close_to_expiry(
    rs: SimulatedReplicaSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeAws(TEMPORARY, lifetime=3600) as fake:
        monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", fake.url + "/ecs/credentials")
        three_connections(rs, no_credentials_uri(rs))
        assert len(fake.requests) == 1  # one fetch, every connection used it
    with FakeAws(TEMPORARY, lifetime=200) as expiring:  # under the five minutes' margin
        monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", expiring.url + "/ecs/credentials")
        three_connections(rs, no_credentials_uri(rs))
        assert len(expiring.requests) >= 3  # fetched again for each connection


def test_a_refused_cached_credential_is_dropped_and_fetched_again(
    rs: SimulatedReplicaSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mongo_sansio.adapters.blocking import MongoClient

    with FakeAws(TEMPORARY) as fake:
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", fake.url)
        with MongoClient(no_credentials_uri(rs), maxPoolSize=1, **OPTIONS) as client:
            client.admin.command("ping")
            assert len(fake.requests) == 3
            # the keys rotate: the server forgets the cached ones, the service hands out new ones
            rs.call(lambda cluster, now: cluster.authenticator.replace([ROTATED]))
            fake.issue = ROTATED
            rs.configure_failpoint(
                rs.members[0],
                {
                    "configureFailPoint": "failCommand",
                    "mode": {"times": 1},
                    "data": {"failCommands": ["ping"], "closeConnection": True},
                },
            )
            with pytest.raises(MongoError):
                client.admin.command("ping")  # the connection drops: the next one authenticates
            client.admin.command("ping")
            assert len(fake.requests) == 6  # the cached credentials failed (18): fetched again


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_credentials_service_that_is_down(
    runtime: str, rs: SimulatedReplicaSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeAws(TEMPORARY) as gone:
        url = gone.url
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", url)
    with pytest.raises(MongoError) as caught:
        connect(runtime, no_credentials_uri(rs), serverSelectionTimeoutMS=1000)
    assert "cannot get credentials from EC2 instance metadata" in str(caught.value)


# --- PyMongo with pymongo-auth-aws: the reference peer -------------------------------------------


def test_pymongo_authenticates_to_the_simulator(
    rs: SimulatedReplicaSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pymongo_auth_aws", reason="pymongo-auth-aws is not installed")
    import pymongo
    from pymongo.errors import OperationFailure

    for index in (0, 1):
        with pymongo.MongoClient(rs.uri_with_aws(index), **OPTIONS) as client:
            client.test.things.insert_one({"by": "pymongo"})
    bad = rs.uri_with_aws(0).replace(quote(LONG_TERM[1], safe=""), "wrong")
    with pymongo.MongoClient(bad, **OPTIONS) as client, pytest.raises(OperationFailure) as caught:
        client.admin.command("ping")
    assert caught.value.code == 18
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", TEMPORARY[0])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", TEMPORARY[1])
    monkeypatch.setenv("AWS_SESSION_TOKEN", TEMPORARY[2])
    with pymongo.MongoClient(no_credentials_uri(rs), **OPTIONS) as client:
        assert client.test.things.count_documents({"by": "pymongo"}) == 2


def test_the_command_line_simulator_with_aws() -> None:
    """``mongo-sansio sim --aws KEY:SECRET:TOKEN`` prints a URI our client and PyMongo use."""
    import signal
    import threading

    from integration_helpers import cli_process

    from mongo_sansio.adapters.blocking import MongoClient

    with cli_process("sim", "--members", "1", "--aws", "ASIACLI:cli-secret:cli+token/=") as process:
        first_line: list[str] = []
        reader = threading.Thread(target=lambda: first_line.append(process.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(15)
        assert first_line, process.stderr
        uri = first_line[0].strip()
        assert uri.startswith("mongodb://ASIACLI:cli-secret@") and "authMechanism=MONGODB-AWS" in uri
        with MongoClient(uri, **OPTIONS) as client:
            client.test.things.insert_one({"from": "cli"})
        wrong = uri.replace("cli-secret", "bad-secret")
        with MongoClient(wrong, **{**OPTIONS, "serverSelectionTimeoutMS": 800}) as client:
            with pytest.raises(MongoError):
                client.admin.command("ping")
        if importlib.util.find_spec("pymongo_auth_aws") is not None:
            import pymongo

            with pymongo.MongoClient(uri, **OPTIONS) as peer:
                assert peer.test.things.count_documents({"from": "cli"}) == 1
        process.send_signal(signal.SIGTERM)
        assert process.wait(10) == 0
