"""Everyday PyMongo code, run unchanged with PyMongo and with our client: the drop-in proof.

Each snippet is a small function ``snippet(client, ns)`` written as PyMongo code is written,
with PyMongo's names taken from ``ns`` (see snippet_harness.py: PyMongo's namespace or ours).
Both clients run it on the same simulated replica set, each on a freshly dropped database, and
what it returns (or raises) is compared in a normal form: documents with their key order,
result counts, exceptions by PyMongo's class name and server code.  A snippet the simulator
cannot serve yet names the gap and is skipped while PyMongo itself fails on it (or misses the
error it expects); one our client
still answers differently names the difference and is a strict expected failure.

The snippets live in snippets_reads.py (BSON values, inserts, find, cursors, aggregate),
snippets_writes.py (updates, deletes, find_one_and_*, bulk_write, indexes) and
snippets_admin.py (collections, databases, the client, write concerns, codec options,
sessions, transactions, change streams, PyMongo's error cases) and snippets_details.py (cursor
closing, raw documents, projections, collations, explain, transactions' isolation and errors).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")
import snippets_admin  # noqa: E402, F401 - registers its snippets
import snippets_details  # noqa: E402, F401 - registers its snippets
import snippets_gridfs  # noqa: E402, F401 - registers its snippets
import snippets_reads  # noqa: E402, F401 - registers its snippets
import snippets_writes  # noqa: E402, F401 - registers its snippets
from snippet_harness import DB, SNIPPETS, Snippet, ours_namespace, outcome, pymongo_namespace  # noqa: E402

from mongo_sansio.adapters.blocking import MongoClient  # noqa: E402
from mongo_sansio.adapters.sim import SimulatedReplicaSet  # noqa: E402

OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000}

#: what a snippet returns when the exception it expects did not come, or when the simulator
#: answered otherwise than mongod does
NOT_AS_MONGOD = ("not raised", "not as mongod")

# --- the side-by-side run ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=3) as replica_set:
        yield replica_set


@pytest.fixture(scope="module")
def both_clients(served: SimulatedReplicaSet) -> Iterator[tuple[Any, Any]]:
    theirs: Any = pymongo.MongoClient(served.uri, **OPTIONS)
    ours = MongoClient(served.uri, **OPTIONS)
    try:
        yield theirs, ours
    finally:
        ours.close()
        theirs.close()


def run_on(client: Any, ns: Any, fn: Snippet, *, strict: bool = False) -> Any:
    client.drop_database(DB)
    return outcome(fn, client, ns, strict=strict)


@pytest.mark.parametrize(("fn", "simulator_gap"), SNIPPETS)
def test_snippet_behaves_as_with_pymongo(
    both_clients: tuple[Any, Any], fn: Snippet, simulator_gap: str | None
) -> None:
    theirs, ours = both_clients
    expected = run_on(theirs, pymongo_namespace(), fn)
    if simulator_gap is not None and (
        expected in NOT_AS_MONGOD or (isinstance(expected, tuple) and expected[:1] == ("raised",))
    ):
        pytest.skip(f"simulator gap: {simulator_gap}")
    assert run_on(ours, ours_namespace(), fn) == expected


@pytest.fixture(scope="module")
def gevent_client(served: SimulatedReplicaSet) -> Iterator[Any]:
    gevent_module = pytest.importorskip("mongo_sansio.adapters.gevent", reason="gevent missing")
    client = gevent_module.MongoClient(served.uri, **OPTIONS)
    try:
        yield client
    finally:
        client.close()


@pytest.mark.parametrize("runtime", ["blocking", "gevent"])
@pytest.mark.parametrize(("fn", "simulator_gap"), SNIPPETS)
def test_snippet_with_only_the_client_import_changed(
    request: pytest.FixtureRequest,
    both_clients: tuple[Any, Any],
    runtime: str,
    fn: Snippet,
    simulator_gap: str | None,
) -> None:
    """The drop-in: PyMongo's names everywhere (write models, WriteConcern, CodecOptions,
    ``bson`` values, ``pymongo.errors``) and our client; every value must come back as PyMongo
    gives it, of PyMongo's own classes."""
    theirs, ours = both_clients
    if runtime == "gevent":
        ours = request.getfixturevalue("gevent_client")
    expected = run_on(theirs, pymongo_namespace(), fn, strict=True)
    if simulator_gap is not None and (
        expected in NOT_AS_MONGOD or (isinstance(expected, tuple) and expected[:1] == ("raised",))
    ):
        pytest.skip(f"simulator gap: {simulator_gap}")
    assert run_on(ours, pymongo_namespace(), fn, strict=True) == expected


def test_every_expected_difference_is_a_deliberate_one_on_the_migration_page() -> None:
    """An expected failure of the snippets is a difference kept on purpose: its reason names
    docs/migrating.md, and that page lists it."""
    import pathlib

    page = (pathlib.Path(__file__).parents[2] / "docs" / "migrating.md").read_text(encoding="utf-8")
    reasons = [mark.kwargs["reason"] for param in SNIPPETS for mark in param.marks if mark.name == "xfail"]
    assert reasons
    for reason in reasons:
        assert "not mirrored on purpose (docs/migrating.md)" in reason, reason
    assert "A closed cursor is done at once" in page
    assert "An inserted raw document reports its `_id`" in page
