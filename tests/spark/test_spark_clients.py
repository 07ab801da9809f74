"""The executors' kept clients (adapters/spark/clients.py): a task gets the client the last
task with the same URI and client options used, the table stays bounded, an idle client is
closed when the next task comes, and one inherited from another process is never used.  No
server is needed: a client connects only when it is first used."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
from mongo_sansio.adapters.spark import clients  # noqa: E402
from mongo_sansio.adapters.spark.options import parse_options  # noqa: E402
from mongo_sansio.errors import InvalidOperation, ServerSelectionTimeoutError  # noqa: E402


@pytest.fixture(autouse=True)
def empty_table() -> Iterator[None]:
    clients.close_kept_clients()
    yield
    clients.close_kept_clients()


def _options(port: int, **extra: str) -> Any:
    uri = f"mongodb://127.0.0.1:{port}/?serverSelectionTimeoutMS=100"
    return parse_options({"uri": uri, "database": "db", "collection": "c", **extra})


def _closed(client: Any) -> bool:
    try:
        client.db.c.find_one()
    except InvalidOperation as error:
        return "after close" in str(error)
    except ServerSelectionTimeoutError:  # (nothing listens there: an open client's answer)
        return False
    return False


def test_the_next_task_with_the_same_options_gets_the_same_client() -> None:
    with clients.reused_client(_options(1)) as first:
        pass
    with clients.reused_client(_options(1)) as again:
        assert again is first
    with clients.reused_client(_options(1, readPreference="secondary")) as other:
        assert other is not first  # other client options: another client
    assert not _closed(first)


def test_the_table_is_bounded_and_closes_the_least_recently_used(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(clients.time, "monotonic", lambda: now[0])
    made = []
    for port in range(1, clients.KEPT_CLIENTS + 2):
        now[0] += 1
        with clients.reused_client(_options(port)) as client:
            made.append(client)
    assert len(clients._kept) == clients.KEPT_CLIENTS
    assert _closed(made[0]) and not any(_closed(c) for c in made[1:])


def test_an_idle_client_is_closed_when_the_next_task_comes(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(clients.time, "monotonic", lambda: now[0])
    with clients.reused_client(_options(1)) as idle:
        pass
    now[0] += clients.IDLE_SECONDS + 1
    with clients.reused_client(_options(2)):
        assert _closed(idle)
    with clients.reused_client(_options(1)) as fresh:
        assert fresh is not idle


def test_a_client_in_use_is_never_retired(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(clients.time, "monotonic", lambda: now[0])
    with clients.reused_client(_options(1)) as busy:
        now[0] += clients.IDLE_SECONDS + 1
        for port in range(2, clients.KEPT_CLIENTS + 4):
            with clients.reused_client(_options(port)):
                pass
        assert not _closed(busy)


def test_a_client_from_another_process_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    with clients.reused_client(_options(1)) as parents:
        pass
    monkeypatch.setattr(clients.os, "getpid", lambda: -1)  # as in a forked child
    with clients.reused_client(_options(1)) as childs:
        assert childs is not parents
    assert not _closed(parents)  # the parent's sockets are not the child's to close
    parents.close()
