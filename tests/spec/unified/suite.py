"""What a thin test module needs: cases, deployments, and one call to run a case.

* :func:`unified_cases` -- one pytest param per test of every file of a suite folder (found by
  ``tests/spec/_specs.py``), id ``file: description``, parsed with the driver's Extended JSON
  parser; with our driver, the reason-named marks of :mod:`.known_gaps`.
* :class:`DeploymentPool` -- simulators started lazily per topology (a replica set; a
  standalone when the simulator offers ``standalone=True``; a one-member replica set behind
  the simulator's load balancer front, for files and tests that ask for a ``load-balanced``
  topology; a sharded cluster, the session's :class:`SharedSimulators`', for what needs
  one) and per access control: one
  without, and, for files that ask for ``auth: true``, one whose clients authenticate with
  SCRAM as a user of the admin database; each reused by every test of a module.
* :func:`run_case` -- pick the first deployment that meets the file's and the test's
  runOnRequirements (else skip with the reason), run the test, and turn
  :class:`~.matching.UnsupportedInTest` into a skip naming what is missing.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import signal
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .driver import Driver
from .entities import join_background_closes
from .known_gaps import gap_reasons
from .matching import UnsupportedInTest
from .requirements import Deployment, requirements_reason, version_tuple
from .runner import TestRunner

if TYPE_CHECKING:
    from adapters.sim import SimulatedReplicaSet, SimulatedShardedCluster
else:
    from mongo_sansio.adapters.sim import SimulatedReplicaSet, SimulatedShardedCluster
from mongo_sansio.testing.server.commands_admin import VERSIONS
from mongo_sansio.testing.server.oidc import mint_hs256

__all__ = ["DeploymentPool", "SharedSimulators", "run_case", "unified_cases"]

TOPOLOGIES = ("replicaset", "single")
#: started only for requirements that name it (see choose_deployment), or for every test
#: that allows it with $MONGO_SANSIO_UNIFIED_TOPOLOGY=load-balanced (the load balancer spec
#: asks drivers to run every unified suite against a load-balanced deployment too)
LOAD_BALANCED = "load-balanced"
#: a sharded cluster (two mongos over two three-member shards), tried after the others, for
#: the files that need one: one per session (SharedSimulators); MONGO_SANSIO_SHARDED_SPECS=0
#: leaves it out
SHARDED_SWITCH = "MONGO_SANSIO_SHARDED_SPECS"
TOPOLOGY_ENV = "MONGO_SANSIO_UNIFIED_TOPOLOGY"
#: the user that clients of an auth-enabled deployment authenticate as (admin database)
AUTH_USER = ("unified-runner", "simulated-secret")
#: the simulator's wire versions: 21 answers as mongod 7.0 (every deployment's default), 25
#: as 8.0 (with 8.0's commands and options), started only for tests that need a newer server
DEFAULT_WIRE_VERSION = 21
NEWER_WIRE_VERSION = 25
NEWER_SERVER = (8, 0, 99)  # the newest minServerVersion the newer simulator meets
CLOSE_TIMEOUT_SECONDS = 10.0
#: the simulated OIDC identity provider of auth-enabled deployments
OIDC_SECRET = "unified-runner-oidc-secret"
OIDC_AUDIENCE = "mongo-sansio-unified"
#: one test's time limit (the watchdog of tests/spec/conftest.py, 60 s, ends the whole run)
TEST_TIME_LIMIT_SECONDS = 20.0


def standalone_supported() -> bool:
    return "standalone" in inspect.signature(SimulatedReplicaSet).parameters


def unified_cases(suite: str, driver: Driver, *, prefix: str = "") -> list[Any]:
    """pytest params for every test of every file under ``suite`` (see the module docstring);
    ``prefix`` starts every id (to tell apart suites with the same file names)."""
    from _specs import suite_cases  # tests/spec is on sys.path for spec modules

    def expand(path: Path, _parsed: Any) -> Iterable[tuple[str, Any]]:
        file = driver.load_json(path.read_text(encoding="utf-8"))
        for test in file["tests"]:
            yield test["description"], (file, test)

    params = suite_cases(suite, expand)
    marked = []
    for param in params:
        marks = list(param.marks)
        if param.values[0] is not None:
            file, test = param.values[0]
            marks += [
                pytest.mark.xfail(reason=r, strict=False)
                for r in gap_reasons(file, test, driver=driver.name)
            ]
        marked.append(pytest.param(*param.values, id=f"{prefix}{param.id}", marks=marks))
    return marked


class SharedSimulators:
    """Simulators kept for a whole test session, shared by every module's pool: the sharded
    clusters (one per access control and wire version), each started on first use, so the
    suites that need one pay for starting it once."""

    def __init__(self) -> None:
        self._simulators: dict[tuple[bool, int], Any] = {}

    def sharded(self, users: dict[str, str] | None, wire_version: int) -> Any:
        key = (users is not None, wire_version)
        if key not in self._simulators:
            self._simulators[key] = _sharded_cluster(users, wire_version).start()
        return self._simulators[key]

    def close(self) -> None:
        for simulator in self._simulators.values():
            simulator.close()
        self._simulators.clear()


def _sharded_cluster(users: dict[str, str] | None, wire_version: int) -> Any:
    return SimulatedShardedCluster(shards=2, mongos=2, members=3, auth=users, max_wire_version=wire_version)


class DeploymentPool:
    """Simulated deployments by topology, started on first use and closed by :meth:`close`
    (the sharded clusters of ``shared``, when given, are the session's: not closed here)."""

    def __init__(self, driver: Driver, shared: SharedSimulators | None = None) -> None:
        self.driver = driver
        self._shared = shared
        # by (topology, auth, wire version)
        self._deployments: dict[tuple[str, bool, int], Deployment] = {}
        self._simulators: list[Any] = []

    def available(self) -> tuple[str, ...]:
        found = TOPOLOGIES if standalone_supported() else TOPOLOGIES[:1]
        if os.environ.get(SHARDED_SWITCH) != "0":
            found = (*found, "sharded")
        return found

    def get(
        self, topology: str, *, auth: bool = False, wire_version: int = DEFAULT_WIRE_VERSION
    ) -> Deployment:
        """The deployment of ``topology``; ``auth``: one that runs with access control;
        ``wire_version``: the server version it answers as (see NEWER_WIRE_VERSION)."""
        key = (topology, auth, wire_version)
        if key not in self._deployments:
            self._deployments[key] = self._start(topology, auth, wire_version)
        return self._deployments[key]

    def _start(self, topology: str, auth: bool, wire_version: int) -> Deployment:
        users = {AUTH_USER[0]: AUTH_USER[1]} if auth else None
        shape: dict[str, Any] = {"standalone": True} if topology == "single" else {"members": 3}
        if topology == LOAD_BALANCED:
            # two routers: SINGLE_MONGOS_LB_URI and MULTI_MONGOS_LB_URI of the spec's setup
            shape = {"members": 1, "load_balanced": True, "load_balancer_services": 2}
        token_file = None
        if auth:  # SCRAM users, and MONGODB-OIDC for the auth spec's OIDC tests
            shape.update(oidc_secret=OIDC_SECRET, oidc_audience=OIDC_AUDIENCE)
            token_file = _oidc_token_file()
        simulator: Any
        if topology == "sharded" and self._shared is not None:
            token_file = None
            simulator = self._shared.sharded(users, wire_version)
        else:
            if topology == "sharded":
                token_file = None
                simulator = _sharded_cluster(users, wire_version)
            else:
                simulator = SimulatedReplicaSet(**shape, auth=users, max_wire_version=wire_version)
            simulator.start()
            self._simulators.append(simulator)
        deployment = Deployment(
            members=list(simulator.mongos if topology == "sharded" else simulator.members),
            topology=topology,
            server_version="0",
            replset=simulator.replset if topology == "replicaset" else None,
            load_balancer=getattr(simulator, "load_balancer", None),
            multi_load_balancer=getattr(simulator, "multi_load_balancer", None),
            auth=auth,
            credentials=AUTH_USER if auth else None,
            simulator=simulator,
            oidc_token_file=token_file,
        )
        client = self.driver.client_class(deployment.uri(), serverSelectionTimeoutMS=10000)
        try:
            info = client.admin.command("buildInfo")
        finally:
            client.close()
        array = info.get("versionArray")
        deployment.server_version = (
            ".".join(str(int(p)) for p in array[:3]) if array else str(info["version"])
        )
        deployment.server_parameter = functools.lru_cache(maxsize=None)(
            functools.partial(_server_parameter, self.driver, deployment)
        )
        return deployment

    def close(self) -> None:
        join_background_closes(CLOSE_TIMEOUT_SECONDS)
        for simulator in self._simulators:
            simulator.close()
        self._simulators.clear()
        self._deployments.clear()

    def __enter__(self) -> DeploymentPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _oidc_token_file() -> str:
    """A file with a JWT for the deployments' OIDC issuer (valid for a day), named by
    $OIDC_TOKEN_FILE as the auth spec's ``ENVIRONMENT: test`` expects (set once per run)."""
    path = os.environ.get("OIDC_TOKEN_FILE")
    if path and os.path.exists(path):
        return path
    claims = {"sub": "unified-runner-oidc", "aud": OIDC_AUDIENCE, "exp": int(time.time()) + 86400}
    handle, path = tempfile.mkstemp(prefix="mongo-sansio-oidc-", suffix=".jwt")
    with os.fdopen(handle, "w") as file:
        file.write(mint_hs256(claims, OIDC_SECRET))
    os.environ["OIDC_TOKEN_FILE"] = path
    return path


def _server_parameter(driver: Driver, deployment: Deployment, name: str) -> Any:
    client = driver.client_class(deployment.uri(), serverSelectionTimeoutMS=10000)
    try:
        reply = client.admin.command({"getParameter": 1, name: 1})
    except driver.base_error as error:
        raise KeyError(name) from error
    finally:
        client.close()
    if name not in reply:
        raise KeyError(name)
    return reply[name]


def choose_deployment(pool: DeploymentPool, file: Any, test: Any) -> Deployment:
    """The first deployment meeting both requirement lists, else skip with the reason.
    Deployments with access control, or answering as a newer server, are tried (and
    started) only for requirements that name authentication, or a newer server."""
    reasons = []
    auths = [False, True] if _asks_for_auth(file) or _asks_for_auth(test) else [False]
    wire_versions = [DEFAULT_WIRE_VERSION]
    if _asks_for_newer_server(file) or _asks_for_newer_server(test):
        wire_versions.append(NEWER_WIRE_VERSION)
    topologies = pool.available()
    if os.environ.get(TOPOLOGY_ENV) == LOAD_BALANCED:
        topologies = (LOAD_BALANCED, *topologies)  # every test that allows it, behind the front
    elif _asks_for_load_balanced(file) or _asks_for_load_balanced(test):
        topologies += (LOAD_BALANCED,)
    candidates = [
        (topology, auth, wire_version)
        for wire_version in wire_versions
        for auth in auths
        for topology in topologies
    ]
    for topology, auth, wire_version in candidates:
        deployment = pool.get(topology, auth=auth, wire_version=wire_version)
        reason = requirements_reason(file.get("runOnRequirements"), deployment) or requirements_reason(
            test.get("runOnRequirements"), deployment
        )
        if reason is None:
            return deployment
        reasons.append(reason)
    pytest.skip("; ".join(dict.fromkeys(reasons)) or "no deployment")


def _asks_for_newer_server(document: Any) -> bool:
    """Some requirement names a minServerVersion that only the newer simulator meets."""
    default = version_tuple(VERSIONS[DEFAULT_WIRE_VERSION][0])
    return any(
        default < version_tuple(requirement["minServerVersion"]) <= NEWER_SERVER
        for requirement in document.get("runOnRequirements") or ()
        if "minServerVersion" in requirement
    )


def _asks_for_load_balanced(document: Any) -> bool:
    """Some requirement names the load-balanced topology (and the simulator offers it)."""
    return "load_balanced" in inspect.signature(SimulatedReplicaSet).parameters and any(
        LOAD_BALANCED in requirement.get("topologies", ())
        for requirement in document.get("runOnRequirements") or ()
    )


def _asks_for_auth(document: Any) -> bool:
    return any(
        requirement.get("auth") is True or "authMechanism" in requirement
        for requirement in document.get("runOnRequirements") or ()
    )


class TestTimeLimit(BaseException):
    """Raised in the main thread when a test outlives its time limit: a BaseException, so
    that neither the client nor the runner's loops take it for an operation's error."""

    __test__ = False  # not a pytest class


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block with an AssertionError after ``seconds`` (SIGALRM, main thread
    only; elsewhere no limit): a test that waits for ever (withTransaction retrying for its
    120 s against a server without transactions, an iteration nothing feeds) fails alone
    instead of tripping the module's watchdog, which ends the whole run."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(_signum: int, _frame: Any) -> None:
        raise TestTimeLimit(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except TestTimeLimit as expired:
        raise AssertionError(f"the test ran for more than {seconds} s") from expired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_case(
    case: Any,
    pool: DeploymentPool,
    driver: Driver,
    *,
    expect_failure: bool = False,
    attempts: int = 1,
    **options: Any,
) -> None:
    """Run one case of :func:`unified_cases` (see the module docstring).  With
    ``expect_failure`` (the format's own valid-fail files) the test must fail: any assertion
    or error passes the case, a clean run fails it.  ``attempts`` > 1 runs a case whose
    expectation failed again from the start (a fresh runner, initial data and entities), up
    to that many runs in all: for suites whose cases give the client a few tens of
    milliseconds (CSOT), which a loaded machine can overrun; a real fault fails every run."""
    file, test = case
    if test.get("skipReason"):
        pytest.skip(f"the test file skips it: {test['skipReason']}")
    deployment = choose_deployment(pool, file, test)
    for attempt in range(1, attempts + 1):
        try:
            with time_limit(TEST_TIME_LIMIT_SECONDS):
                TestRunner(driver, deployment, file, test, **options).run()
        except UnsupportedInTest as missing:
            pytest.skip(str(missing))
        except AssertionError:
            if expect_failure:
                return
            if attempt < attempts:
                continue
            raise
        except Exception:
            if not expect_failure:
                raise
            return
        break
    if expect_failure:
        pytest.fail("this valid-fail test ran without an error or a failed assertion")
