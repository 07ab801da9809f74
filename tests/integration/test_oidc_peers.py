"""MONGODB-OIDC with the simulator's peers and entry points (:mod:`oidc_kit`): PyMongo, the
reference peer, authenticating with its own callback objects (which our clients accept
unchanged) and with ``ENVIRONMENT: test``; the token-file environments on every runtime; the
``mongo-sansio sim --oidc-*`` command line (HS256, the IdpInfo it announces, RS256 with a JWKS
file); a configuration given in the connection string alone.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from integration_helpers import fail_once
from oidc_kit import (  # noqa: F401 - the fixtures are used by name
    AUDIENCE,
    SECRET,
    URI,
    Callback,
    clear_failpoints_fixture,
    done,
    find,
    human,
    machine,
    run_on,
    runtimes,
    sim_fixture,
    token,
    uri_fixture,
)

from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.errors import AuthenticationError

# -- built-in environments ----------------------------------------------------------------------


@runtimes
@pytest.mark.parametrize(
    ("environment", "variable"),
    [("test", "OIDC_TOKEN_FILE"), ("k8s", "AZURE_FEDERATED_TOKEN_FILE"), ("k8s", "AWS_WEB_IDENTITY_TOKEN_FILE")],
)
def test_token_file_environments(
    runtime: str, environment: str, variable: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "token"
    path.write_text(token("workload") + "\n")
    for name in ("OIDC_TOKEN_FILE", "AZURE_FEDERATED_TOKEN_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, str(path))

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(authMechanismProperties={"ENVIRONMENT": environment})
        await find(client)

    run_on(runtime, scenario)


def test_test_environment_without_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OIDC_TOKEN_FILE", raising=False)

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(authMechanismProperties={"ENVIRONMENT": "test"})
        with pytest.raises(AuthenticationError, match="OIDC_TOKEN_FILE is not set"):
            await find(client)

    run_on("blocking", scenario)


# -- PyMongo, the reference peer ----------------------------------------------------------------


def pymongo_callback(counter: list[Any], *, human_flow: bool = False, lifetime: float = 600) -> Any:
    auth_oidc = pytest.importorskip("pymongo.auth_oidc")

    class PyMongoCallback(auth_oidc.OIDCCallback):
        def fetch(self, context: Any) -> Any:
            counter.append(context)
            return auth_oidc.OIDCCallbackResult(access_token=token("bob", lifetime=lifetime), refresh_token="r" if human_flow else None)

    return PyMongoCallback()


@pytest.mark.parametrize("flow", ["machine", "human"])
def test_pymongo_authenticates_to_the_simulator(flow: str, sim: SimulatedReplicaSet) -> None:
    pymongo = pytest.importorskip("pymongo")
    contexts: list[Any] = []
    callback = pymongo_callback(contexts, human_flow=flow == "human")
    key = "OIDC_CALLBACK" if flow == "machine" else "OIDC_HUMAN_CALLBACK"
    client = pymongo.MongoClient(
        URI[0], authMechanism="MONGODB-OIDC", authMechanismProperties={key: callback}, retryReads=False
    )
    try:
        client.test.oidc.insert_one({"peer": "pymongo"})
        fail_once(sim, "find", errorCode=391)
        assert client.test.oidc.find_one({"peer": "pymongo"}) is not None
        assert len(contexts) == 2
        if flow == "human":
            assert contexts[0].idp_info.issuer == "https://idp.test"
        expired = pymongo_callback([], lifetime=-1)
        refused = pymongo.MongoClient(
            URI[0], authMechanism="MONGODB-OIDC", serverSelectionTimeoutMS=3000,
            authMechanismProperties={"OIDC_CALLBACK": expired},
        )
        with pytest.raises(pymongo.errors.OperationFailure) as failure:
            refused.test.oidc.find_one()
        refused.close()
        assert failure.value.code == 18
    finally:
        client.close()


@runtimes
def test_our_clients_take_a_pymongo_callback(runtime: str) -> None:
    contexts: list[Any] = []
    callback = pymongo_callback(contexts)
    auth_oidc = pytest.importorskip("pymongo.auth_oidc")

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**machine(callback))
        await done(client.test.oidc.insert_one({"peer": "ours"}))
        await find(client)
        assert len(contexts) == 1
        assert isinstance(contexts[0], auth_oidc.OIDCCallbackContext)

    run_on(runtime, scenario)


# -- the command line ---------------------------------------------------------------------------


def test_the_sim_command_serves_oidc() -> None:
    import signal

    from integration_helpers import cli_process, first_line_uri

    from mongo_sansio.adapters.blocking import MongoClient

    with cli_process(
        "sim", "--members", "1", "--oidc-secret", SECRET, "--oidc-audience", AUDIENCE,
        "--oidc-issuer", "https://idp.cli", "--oidc-client-id", "cli-client",
    ) as process:
        uri = first_line_uri(process)
        client = MongoClient(
            uri, authMechanism="MONGODB-OIDC", **machine(Callback()),
            serverSelectionTimeoutMS=5000,
        )
        human_callback = Callback()
        human_client = MongoClient(
            uri, authMechanism="MONGODB-OIDC", **human(human_callback),
            serverSelectionTimeoutMS=5000,
        )
        try:
            client.test.cli.insert_one({"from": "cli"})
            assert client.test.cli.count_documents({}) == 1
            assert human_client.test.cli.count_documents({}) == 1
            info = human_callback.contexts[0].idp_info
            assert (info.issuer, info.clientId) == ("https://idp.cli", "cli-client")
        finally:
            client.close()
            human_client.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0


def test_the_sim_command_wants_both_oidc_options(capsys: pytest.CaptureFixture[str]) -> None:
    from mongo_sansio.adapters.cli import main

    assert main(["sim", "--oidc-secret", "s"]) == 2
    assert "--oidc-audience" in capsys.readouterr().err


def test_rs256_tokens_with_a_jwks_file(tmp_path: Any) -> None:
    """RS256 beside HS256: the sim command trusts the keys of a JSON Web Key Set file."""
    import base64
    import json
    import signal

    from integration_helpers import cli_process, first_line_uri

    from mongo_sansio.adapters.blocking import MongoClient

    rsa = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.rsa")
    hashes = pytest.importorskip("cryptography.hazmat.primitives.hashes")
    padding = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.padding")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    numbers = key.public_key().public_numbers()

    def b64(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    def number(value: int) -> str:
        return b64(value.to_bytes((value.bit_length() + 7) // 8, "big"))

    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{"kty": "RSA", "kid": "main", "n": number(numbers.n), "e": number(numbers.e)}]}))

    def rs256(_n: int) -> str:
        header = b64(json.dumps({"alg": "RS256", "kid": "main"}).encode())
        claims = b64(json.dumps({"sub": "rsa", "aud": AUDIENCE, "exp": time.time() + 600}).encode())
        signature = key.sign(f"{header}.{claims}".encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{header}.{claims}.{b64(signature)}"

    with cli_process("sim", "--members", "1", "--oidc-jwks", str(jwks), "--oidc-audience", AUDIENCE) as process:
        uri = first_line_uri(process)
        client = MongoClient(uri, authMechanism="MONGODB-OIDC", **machine(Callback(rs256)), serverSelectionTimeoutMS=5000)
        hs256 = MongoClient(uri, authMechanism="MONGODB-OIDC", **machine(Callback()), serverSelectionTimeoutMS=5000)
        try:
            client.test.rsa.insert_one({"signed": "RS256"})
            with pytest.raises(AuthenticationError, match="RS256"):  # no secret: HS256 refused
                hs256.test.rsa.find_one()
        finally:
            client.close()
            hs256.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0


@pytest.mark.parametrize("runtime", ["blocking", "asyncio"])
def test_uri_only_configuration_and_connection_status(
    runtime: str, sim: SimulatedReplicaSet, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENVIRONMENT in the connection string alone; the server reports the token's subject as
    the connection's user of $external (connectionStatus), as mongod does."""
    path = tmp_path / "token"
    path.write_text(sim.oidc_token("dave"))
    monkeypatch.setenv("OIDC_TOKEN_FILE", str(path))
    uri = URI[0] + "&authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:test"

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(uri)
        status = await done(client.admin.command("connectionStatus"))
        assert status["authInfo"]["authenticatedUsers"] == [{"user": "dave", "db": "$external"}]

    run_on(runtime, scenario)


def test_pymongo_with_the_test_environment(
    sim: SimulatedReplicaSet, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pymongo = pytest.importorskip("pymongo")
    path = tmp_path / "token"
    path.write_text(sim.oidc_token("erin"))
    monkeypatch.setenv("OIDC_TOKEN_FILE", str(path))
    client = pymongo.MongoClient(URI[0] + "&authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:test")
    try:
        status = client.admin.command("connectionStatus")
        assert status["authInfo"]["authenticatedUsers"] == [{"user": "erin", "db": "$external"}]
    finally:
        client.close()


def test_pymongo_async_client_authenticates(sim: SimulatedReplicaSet) -> None:
    pymongo = pytest.importorskip("pymongo")
    contexts: list[Any] = []
    callback = pymongo_callback(contexts)

    async def main() -> None:
        client = pymongo.AsyncMongoClient(
            URI[0], authMechanism="MONGODB-OIDC", authMechanismProperties={"OIDC_CALLBACK": callback}
        )
        try:
            await client.test.oidc.insert_one({"peer": "pymongo-async"})
            fail_once(sim, "find", errorCode=391)
            assert await client.test.oidc.find_one({"peer": "pymongo-async"}) is not None
        finally:
            await client.close()

    asyncio.run(main())
    assert len(contexts) == 2
