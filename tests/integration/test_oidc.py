"""MONGODB-OIDC against the simulator's HS256 issuer on every runtime (:mod:`oidc_kit`): the
auth spec's prose tests that make sense against the simulator -- the callback called once and
cached, invalid tokens, the cache kept on other errors, reauthentication after a 391 in find,
insert, a session, a transaction and the middle of a cursor, the callback's inputs and time
limit, speculative authentication, the human flow (IdpInfo, refresh tokens, ALLOWED_HOSTS) --
and refused tokens (wrong audience, expired) or one expiring while connections use it.
PyMongo, the command line, RS256 and the built-in environments: ``test_oidc_peers.py``.
"""

from __future__ import annotations

import threading
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
from mongo_sansio.auth.oidc import OIDCCallback, OIDCCallbackContext, OIDCCallbackResult
from mongo_sansio.errors import AuthenticationError, ConfigurationError, MongoError

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
