"""MONGODB-OIDC against the simulator's HS256 issuer, on every runtime and with PyMongo.

Scenarios are written once as coroutines over a PyMongo-shaped client (:func:`run_on`): the
blocking and gevent clients' calls return at once (a coroutine that never suspends is driven
by hand), the asyncio and trio clients' calls are awaited.  They cover the auth spec's prose
tests that make sense against the simulator (callback called once and cached, invalid tokens,
the cache kept on other errors, reauthentication after a 391 in find, insert, a session and
the middle of a cursor, the callback's inputs and time limit, ALLOWED_HOSTS for human
callbacks, speculative authentication), refused tokens (wrong audience, expired) and a token
expiring while connections use it.  PyMongo, the reference peer, authenticates to the same
simulator with a PyMongo callback object, which our clients accept unchanged.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from integration_helpers import fail_once

from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.auth.oidc import OIDCCallback, OIDCCallbackContext, OIDCCallbackResult
from mongo_sansio.errors import AuthenticationError, ConfigurationError, MongoError
from mongo_sansio.testing.server.oidc import OidcIssuer, mint_hs256

SECRET = "integration-oidc-secret"
AUDIENCE = "mongo-sansio-tests"
ISSUER = OidcIssuer(secret=SECRET, audience=AUDIENCE, issuer="https://idp.test", client_id="cid")
RUNTIMES = ("blocking", "gevent", "asyncio", "trio")


def token(sub: str = "alice", *, audience: str = AUDIENCE, lifetime: float = 600.0) -> str:
    return mint_hs256({"sub": sub, "aud": audience, "exp": time.time() + lifetime}, SECRET)


class Callback(OIDCCallback):
    """Counts its calls and keeps their contexts; ``tokens`` gives each call's token (the
    last one repeats), a function of the call number, or None (a valid token)."""

    def __init__(self, tokens: Any = None, *, refresh: str | None = None, result: Any = "token") -> None:
        self.tokens = tokens
        self.refresh = refresh
        self.result = result
        self.contexts: list[Any] = []
        self._lock = threading.Lock()

    @property
    def calls(self) -> int:
        return len(self.contexts)

    def fetch(self, context: Any) -> Any:
        with self._lock:
            self.contexts.append(context)
            number = len(self.contexts)
        if self.result != "token":
            return self.result
        if self.tokens is None:
            access = token()
        elif callable(self.tokens):
            access = self.tokens(number)
        else:
            access = self.tokens[min(number, len(self.tokens)) - 1]
        return OIDCCallbackResult(access_token=access, refresh_token=self.refresh)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=1, oidc_issuer=ISSUER, advertised_host="localhost") as rs:
        yield rs


@pytest.fixture(autouse=True)
def clear_failpoints(sim: SimulatedReplicaSet) -> Iterator[None]:
    yield
    primary = sim.primary
    assert primary is not None
    sim.configure_failpoint(primary, {"configureFailPoint": "failCommand", "mode": "off"})


def client_class(runtime: str) -> Any:
    if runtime == "blocking":
        from mongo_sansio.adapters.blocking import MongoClient

        return MongoClient
    if runtime == "gevent":
        pytest.importorskip("gevent", reason="the gevent extra is not installed")
        from mongo_sansio.adapters.gevent import MongoClient as GeventClient

        return GeventClient
    pytest.importorskip(runtime, reason=f"{runtime} is not installed")
    if runtime == "asyncio":
        from mongo_sansio.adapters.asyncio import AsyncMongoClient

        return AsyncMongoClient
    from mongo_sansio.adapters.trio import AsyncMongoClient as TrioClient

    return TrioClient


async def done(value: Any) -> Any:
    """The value of a call on either kind of client (awaited when it is awaitable)."""
    return (await value) if inspect.isawaitable(value) else value


def run_on(runtime: str, scenario: Callable[[Callable[..., Any]], Awaitable[Any]]) -> Any:
    """Run ``scenario(make_client)`` on ``runtime``; ``make_client(uri=None, **options)``
    makes an OIDC client of that runtime (``uri`` None: the simulator's)."""
    cls = client_class(runtime)
    made: list[Any] = []

    def make_client(uri: str | None = None, **options: Any) -> Any:
        settings = {"authMechanism": "MONGODB-OIDC", "retryReads": False, "serverSelectionTimeoutMS": 5000}
        settings.update(options)
        client = cls(uri or URI[0], **settings)
        made.append(client)
        return client

    async def main() -> Any:
        try:
            return await scenario(make_client)
        finally:
            for client in made:
                await done(client.close())

    if runtime == "asyncio":
        return asyncio.run(main())
    if runtime == "trio":
        import trio

        return trio.run(main)
    coroutine = main()  # sync clients: nothing in it ever suspends
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("a synchronous scenario suspended")


URI: list[str] = [""]


@pytest.fixture(autouse=True)
def uri(sim: SimulatedReplicaSet) -> None:
    URI[0] = f"mongodb://{sim.members[0]}/?directConnection=true"


def machine(callback: Any, **extra: Any) -> dict[str, Any]:
    return {"authMechanismProperties": {"OIDC_CALLBACK": callback, **extra}}


def human(callback: Any, **extra: Any) -> dict[str, Any]:
    return {"authMechanismProperties": {"OIDC_HUMAN_CALLBACK": callback, **extra}}


async def find(client: Any) -> list[Any]:
    cursor = client.test.oidc.find({})
    return list(await done(cursor.to_list()))


runtimes = pytest.mark.parametrize("runtime", RUNTIMES)


# -- the machine flow ---------------------------------------------------------------------------


@runtimes
def test_callback_called_once_and_cached(runtime: str) -> None:
    callback = Callback()

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**machine(callback), connectTimeoutMS=7000)
        await done(client.test.oidc.insert_one({"x": 1}))
        for _ in range(5):
            await find(client)
        assert callback.calls == 1
        context = callback.contexts[0]
        assert context.version == 1 and context.username == ""
        assert context.idp_info is None and context.refresh_token is None
        # the time limit: what remains of connectTimeoutMS (no timeoutMS given)
        assert 0 < context.timeout_seconds <= 7

    run_on(runtime, scenario)


def test_callback_called_once_for_many_threads() -> None:
    from mongo_sansio.adapters.blocking import MongoClient

    callback = Callback()
    client = MongoClient(URI[0], authMechanism="MONGODB-OIDC", **machine(callback))
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(20):
                client.test.oidc.find_one()
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    client.close()
    assert not errors
    assert callback.calls == 1


@runtimes
@pytest.mark.parametrize(
    ("result", "message"),
    [(None, "returned None"), ({"expires_in_seconds": 5}, "without an access_token")],
    ids=["none", "missing-data"],
)
def test_callback_bad_results_fail(runtime: str, result: Any, message: str) -> None:
    callback = Callback(result=result)

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**machine(callback))
        with pytest.raises(AuthenticationError, match=message):
            await find(client)

    run_on(runtime, scenario)


def test_callback_exception_is_typed() -> None:
    class Broken(OIDCCallback):
        def fetch(self, context: OIDCCallbackContext) -> OIDCCallbackResult:
            raise RuntimeError("the IdP is down")

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**machine(Broken()))
        with pytest.raises(AuthenticationError, match="RuntimeError: the IdP is down"):
            await find(client)

    run_on("blocking", scenario)


@pytest.mark.parametrize(
    "properties",
    [
        {"OIDC_CALLBACK": Callback(), "ENVIRONMENT": "test"},
        {"ENVIRONMENT": "azure", "TOKEN_RESOURCE": "x", "ALLOWED_HOSTS": []},
        {"OIDC_CALLBACK": Callback(), "OIDC_HUMAN_CALLBACK": Callback()},
        {"OIDC_CALLBACK": "not a callback"},
        {"OIDC_CALLBACK": Callback(), "ALLOWED_HOSTS": ["localhost"]},
    ],
    ids=["environment-and-callback", "allowed-hosts-machine", "two-callbacks", "not-callable", "allowed-hosts-callback"],
)
def test_invalid_configurations_refused_at_construction(properties: dict[str, Any]) -> None:
    from mongo_sansio.adapters.blocking import MongoClient

    with pytest.raises(ConfigurationError):
        MongoClient(URI[0], authMechanism="MONGODB-OIDC", authMechanismProperties=properties)


def test_allowed_hosts_in_the_connection_string_refused() -> None:
    from mongo_sansio.adapters.blocking import MongoClient

    uri = "mongodb://localhost/?authMechanism=MONGODB-OIDC&authMechanismProperties=ALLOWED_HOSTS:%5B%22example.com%22%5D"
    with pytest.raises(ConfigurationError, match="ALLOWED_HOSTS"):
        MongoClient(uri, **human(Callback()))


@runtimes
def test_poisoned_cache_fetches_a_new_token(runtime: str) -> None:
    callback = Callback()

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**machine(callback))
        client._engine.core.oidc_cache.access_token = "not-a-jwt"
        await find(client)
        assert callback.calls == 1

    run_on(runtime, scenario)


@runtimes
def test_invalid_tokens_without_cache_fail_once(runtime: str) -> None:
    callback = Callback(lambda _n: token(audience="someone-else"))

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**machine(callback))
        with pytest.raises(AuthenticationError, match="another audience") as failure:
            await find(client)
        assert failure.value.code == 18
        assert callback.calls == 1

    run_on(runtime, scenario)


def test_the_simulator_mints_its_own_tokens(sim: SimulatedReplicaSet) -> None:
    async def scenario(make: Callable[..., Any]) -> None:
        fresh = Callback(lambda _n: sim.oidc_token("carol"))
        await find(make(**machine(fresh)))
        stale = Callback(lambda _n: sim.oidc_token("carol", expires_in=-10))
        with pytest.raises(AuthenticationError, match="expired"):
            await find(make(**machine(stale)))

    run_on("blocking", scenario)


def test_expired_token_refused() -> None:
    callback = Callback(lambda _n: token(lifetime=-5))

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**machine(callback))
        with pytest.raises(AuthenticationError, match="expired"):
            await find(client)

    run_on("blocking", scenario)


@runtimes
def test_other_errors_keep_the_cache(runtime: str, sim: SimulatedReplicaSet) -> None:
    callback = Callback()

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**machine(callback))
        fail_once(sim, "saslStart", errorCode=20)
        with pytest.raises(MongoError):
            await find(client)
        assert callback.calls == 1
        await find(client)
        assert callback.calls == 1

    run_on(runtime, scenario)


# -- reauthentication ---------------------------------------------------------------------------


@runtimes
@pytest.mark.parametrize("command", ["find", "insert"])
def test_reauthentication_succeeds(runtime: str, command: str, sim: SimulatedReplicaSet) -> None:
    callback = Callback()

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**machine(callback), retryWrites=False)
        fail_once(sim, command, errorCode=391)
        if command == "find":
            await find(client)
        else:
            await done(client.test.oidc.insert_one({"reauth": 1}))
        assert callback.calls == 2

    run_on(runtime, scenario)


@runtimes
@pytest.mark.parametrize("command", ["find", "insert"])
def test_commands_fail_when_reauthentication_fails(runtime: str, command: str, sim: SimulatedReplicaSet) -> None:
    callback = Callback(lambda n: token() if n == 1 else "bad-token")

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**machine(callback), retryWrites=False)
        await find(client)
        fail_once(sim, command, errorCode=391)
        with pytest.raises(MongoError):
            if command == "find":
                await find(client)
            else:
                await done(client.test.oidc.insert_one({"reauth": 2}))
        assert callback.calls == 2

    run_on(runtime, scenario)


@runtimes
def test_reauthentication_in_the_middle_of_a_cursor(runtime: str, sim: SimulatedReplicaSet) -> None:
    callback = Callback()

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**machine(callback))
        collection = client.test.oidc_cursor
        await done(collection.delete_many({}))
        await done(collection.insert_many([{"n": n} for n in range(10)]))
        cursor = collection.find({}, batch_size=3).sort("n")
        first = await done(cursor.next())
        fail_once(sim, "getMore", errorCode=391)
        rest = list(await done(cursor.to_list()))
        assert [first["n"]] + [doc["n"] for doc in rest] == list(range(10))
        assert callback.calls == 2

    run_on(runtime, scenario)


@runtimes
def test_reauthentication_with_a_session(runtime: str, sim: SimulatedReplicaSet) -> None:
    callback = Callback()

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**machine(callback))
        session = await done(client.start_session())
        fail_once(sim, "find", errorCode=391)
        await done(client.test.oidc.find({}, session=session).to_list())
        await done(session.end_session())
        assert callback.calls == 2

    run_on(runtime, scenario)


@pytest.mark.parametrize("runtime", ["blocking", "trio"])
def test_reauthentication_in_a_transaction(runtime: str, sim: SimulatedReplicaSet) -> None:
    callback = Callback()

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**machine(callback))
        collection = client.test.oidc_txn
        await done(collection.delete_many({}))
        session = await done(client.start_session())
        await done(session.start_transaction())
        await done(collection.insert_one({"in": "txn"}, session=session))
        fail_once(sim, "insert", errorCode=391)
        await done(collection.insert_one({"in": "txn", "n": 2}, session=session))
        await done(session.commit_transaction())
        await done(session.end_session())
        assert await done(collection.count_documents({"in": "txn"})) == 2
        assert callback.calls == 2

    run_on(runtime, scenario)


def test_speculative_authentication_ignored_on_reauthentication(sim: SimulatedReplicaSet) -> None:
    first = Callback()
    second = Callback()

    async def scenario(make: Callable[..., Any]) -> None:
        warm = make(**machine(first))
        await find(warm)
        client = make(**machine(second), retryWrites=False)
        client._engine.core.oidc_cache.access_token = warm._engine.core.oidc_cache.access_token
        fail_once(sim, "saslStart", errorCode=18)  # a saslStart would fail: speculation is used
        await done(client.test.oidc.insert_one({"speculative": 1}))
        assert second.calls == 0
        sim.configure_failpoint(sim.primary, {"configureFailPoint": "failCommand", "mode": "off"})
        fail_once(sim, "insert", errorCode=391)
        await done(client.test.oidc.insert_one({"speculative": 2}))
        assert second.calls == 1

    run_on("blocking", scenario)


def test_expiring_token_is_replaced(sim: SimulatedReplicaSet) -> None:
    """The server answers 391 once the connection's token expired (as mongod does); the
    client fetches a new one and goes on."""
    callback = Callback(lambda n: token(lifetime=1.5 if n == 1 else 600))

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**machine(callback))
        await find(client)
        time.sleep(2.0)
        await find(client)
        assert callback.calls == 2

    run_on("blocking", scenario)


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


# -- the human flow -----------------------------------------------------------------------------


@runtimes
def test_human_callback_inputs_and_refresh(runtime: str, sim: SimulatedReplicaSet) -> None:
    callback = Callback(refresh="refresh-1")

    async def scenario(make: Callable[..., Any]) -> None:
        client = make("mongodb://alice@" + sim.members[0] + "/?directConnection=true", **human(callback))
        await find(client)
        assert callback.calls == 1
        context = callback.contexts[0]
        assert context.username == "alice" and context.timeout_seconds == 300
        assert context.idp_info.issuer == "https://idp.test" and context.idp_info.clientId == "cid"
        assert context.refresh_token is None
        fail_once(sim, "find", errorCode=391)
        await find(client)
        assert callback.calls == 2
        assert callback.contexts[1].refresh_token == "refresh-1"
        assert callback.contexts[1].idp_info.issuer == "https://idp.test"

    run_on(runtime, scenario)


def test_human_reauthentication_after_refresh_fails(sim: SimulatedReplicaSet) -> None:
    """Prose 4.3/4.4: a refresh that gives a refused token falls back to a new two-step
    conversation; when that too is refused, the operation fails after three calls."""
    good = Callback(lambda n: token() if n != 2 else "bad", refresh="bad-refresh")
    bad = Callback(lambda n: token() if n == 1 else "bad", refresh="bad-refresh")

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**human(good))
        await find(client)
        fail_once(sim, "find", errorCode=391)
        await find(client)
        assert good.calls == 3
        other = make(**human(bad))
        await find(other)
        fail_once(sim, "find", errorCode=391)
        with pytest.raises(MongoError):
            await find(other)
        assert bad.calls == 3

    run_on("blocking", scenario)


def test_human_speculative_authentication(sim: SimulatedReplicaSet) -> None:
    """Prose 3.1 and 3.2: with a cached token a new connection authenticates in its hello (a
    failing saslStart is never sent); without one, the saslStart fails the operation."""
    callback = Callback()

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**human(callback))
        fail_once(sim, "saslStart", errorCode=18)
        with pytest.raises(MongoError):
            await find(client)
        sim.configure_failpoint(sim.primary, {"configureFailPoint": "failCommand", "mode": "off"})
        await find(client)
        fail_once(sim, "find", closeConnection=True)
        with pytest.raises(MongoError):
            await find(client)
        fail_once(sim, "saslStart", errorCode=18)
        await find(client)

    run_on("blocking", scenario)


@pytest.mark.parametrize("runtime", ["blocking", "asyncio"])
@pytest.mark.filterwarnings("ignore:unsupported option 'ignored'")
def test_allowed_hosts_blocked(runtime: str) -> None:
    callback = Callback()

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**human(callback, ALLOWED_HOSTS=[]))
        with pytest.raises(ConfigurationError, match="ALLOWED_HOSTS"):
            await find(client)
        other = make(URI[0] + "&ignored=example.com", **human(callback, ALLOWED_HOSTS=["example.com"]))
        with pytest.raises(ConfigurationError, match="ALLOWED_HOSTS"):
            await find(other)
        assert callback.calls == 0

    run_on(runtime, scenario)


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

    from integration_helpers import cli_process

    from mongo_sansio.adapters.blocking import MongoClient

    with cli_process(
        "sim", "--members", "1", "--oidc-secret", SECRET, "--oidc-audience", AUDIENCE,
        "--oidc-issuer", "https://idp.cli", "--oidc-client-id", "cli-client",
    ) as process:
        first_line: list[str] = []
        reader = threading.Thread(target=lambda: first_line.append(process.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(15)
        assert first_line and first_line[0].startswith("mongodb://"), process.stderr
        client = MongoClient(
            first_line[0].strip(), authMechanism="MONGODB-OIDC", **machine(Callback()),
            serverSelectionTimeoutMS=5000,
        )
        human_callback = Callback()
        human_client = MongoClient(
            first_line[0].strip(), authMechanism="MONGODB-OIDC", **human(human_callback),
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

    from integration_helpers import cli_process

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
        first_line: list[str] = []
        reader = threading.Thread(target=lambda: first_line.append(process.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(15)
        assert first_line and first_line[0].startswith("mongodb://"), process.stderr
        uri = first_line[0].strip()
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


@pytest.mark.parametrize("runtime", ["asyncio", "trio"])
def test_async_clients_stop_waiting_for_a_slow_callback(runtime: str) -> None:
    """The async clients wait for a callback no longer than the time it was given (here what
    remains of connectTimeoutMS); the operation fails with a typed error naming it."""

    class Slow(OIDCCallback):
        def fetch(self, context: OIDCCallbackContext) -> OIDCCallbackResult:
            time.sleep(context.timeout_seconds + 1.0)
            return OIDCCallbackResult(access_token=token())

    async def scenario(make: Callable[..., Any]) -> None:
        client = make(**machine(Slow()), connectTimeoutMS=300, serverSelectionTimeoutMS=3000)
        started = time.monotonic()
        with pytest.raises(AuthenticationError, match="TimeoutError: it did not return within its 0.3 s"):
            await find(client)
        assert time.monotonic() - started < 1.2

    run_on(runtime, scenario)


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
