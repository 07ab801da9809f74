"""What the MONGODB-OIDC integration tests share (``test_oidc.py``, ``test_oidc_peers.py``):
the simulator with its HS256 issuer (a module fixture), tokens, a counting callback, and
:func:`run_on`, which runs one scenario written as a coroutine over a PyMongo-shaped client on
any runtime: the blocking and gevent clients' calls return at once (a coroutine that never
suspends is driven by hand), the asyncio and trio clients' calls are awaited."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.auth.oidc import OIDCCallback, OIDCCallbackResult
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


@pytest.fixture(scope="module", name="sim")
def sim_fixture() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=1, oidc_issuer=ISSUER, advertised_host="localhost") as rs:
        yield rs


@pytest.fixture(autouse=True, name="clear_failpoints")
def clear_failpoints_fixture(sim: SimulatedReplicaSet) -> Iterator[None]:
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


@pytest.fixture(autouse=True, name="uri")
def uri_fixture(sim: SimulatedReplicaSet) -> None:
    URI[0] = f"mongodb://{sim.members[0]}/?directConnection=true"


def machine(callback: Any, **extra: Any) -> dict[str, Any]:
    return {"authMechanismProperties": {"OIDC_CALLBACK": callback, **extra}}


def human(callback: Any, **extra: Any) -> dict[str, Any]:
    return {"authMechanismProperties": {"OIDC_HUMAN_CALLBACK": callback, **extra}}


async def find(client: Any) -> list[Any]:
    cursor = client.test.oidc.find({})
    return list(await done(cursor.to_list()))


runtimes = pytest.mark.parametrize("runtime", RUNTIMES)
