"""Load-balanced pinning decisions (mongo_sansio/client/pinning.py) with a stand-in core and
links, and what a flow is told about a load balancer (describe_server)."""

from __future__ import annotations

from typing import Any

from mongo_sansio.client.pinning import SKIP_KILL_CURSORS, CursorPins, pinned_link, settle
from mongo_sansio.client.server_info import describe_server
from mongo_sansio.errors import MongoError, NetworkError, check_reply
from mongo_sansio.sdam.description import ServerDescription, ServerType
from mongo_sansio.sdam.topology import CLIENT_MAX_WIRE_VERSION
from mongo_sansio.sessions import Session
from mongo_sansio.sessions.transaction import TransactionOptions

A = ("lb", 27017)


class Link:
    def __init__(self) -> None:
        self.address = A
        self.pooled = None
        self.broken = False


class Core:
    def __init__(self) -> None:
        self.cursor_pins = CursorPins()
        self.checked_in: list[Link] = []

    def check_in(self, link: Link) -> None:
        self.checked_in.append(link)

    def pool(self, address: Any) -> None:
        return None


def _cursor_reply(cursor_id: int) -> dict[str, Any]:
    return {"ok": 1.0, "cursor": {"id": cursor_id, "ns": "db.c", "firstBatch": []}}


def test_a_cursor_keeps_its_connection_until_drained() -> None:
    core, link = Core(), Link()
    assert pinned_link(core, None, {"find": "c"}) is None  # type: ignore[arg-type]
    assert settle(core, None, {"find": "c"}, link, _cursor_reply(7), None) is True  # type: ignore[arg-type]
    assert pinned_link(core, None, {"getMore": 7, "collection": "c"}) is link  # type: ignore[arg-type]
    reply = {"ok": 1.0, "cursor": {"id": 0, "ns": "db.c", "nextBatch": []}}
    settle(core, None, {"getMore": 7}, link, reply, None)  # type: ignore[arg-type]
    assert core.checked_in == [link] and core.cursor_pins.get(7) is None


def test_a_single_batch_is_not_pinned_and_a_broken_pin_sends_no_kill_cursors() -> None:
    core, link = Core(), Link()
    assert settle(core, None, {"find": "c"}, link, _cursor_reply(0), None) is False  # type: ignore[arg-type]
    settle(core, None, {"find": "c"}, link, _cursor_reply(9), None)  # type: ignore[arg-type]
    assert settle(core, None, {"getMore": 9}, link, None, NetworkError("cut")) is True  # type: ignore[arg-type]
    link.broken = True
    kill = {"killCursors": "c", "cursors": [9]}
    assert pinned_link(core, None, kill) is SKIP_KILL_CURSORS  # type: ignore[arg-type]
    assert core.checked_in == [link]


def test_a_transaction_keeps_its_connection_until_abort_or_a_transient_error() -> None:
    core, link = Core(), Link()
    session = Session(core, implicit=False)
    session.start_transaction(TransactionOptions())
    body = {"insert": "c", "autocommit": False}
    assert settle(core, session, body, link, {"ok": 1.0}, None) is True  # type: ignore[arg-type]
    assert pinned_link(core, session, {"insert": "c"}) is link  # type: ignore[arg-type]
    try:
        check_reply({"ok": 0, "code": 24, "errmsg": "x", "errorLabels": ["TransientTransactionError"]})
    except MongoError as failed:
        error = failed
    settle(core, session, body, link, None, error)  # type: ignore[arg-type]
    assert core.checked_in == [link] and session.pinned_connection is None


def test_the_next_transaction_or_the_session_end_gives_the_connection_back() -> None:
    core, link = Core(), Link()
    session = Session(core, implicit=False)
    session.start_transaction(TransactionOptions())
    settle(core, session, {"insert": "c", "autocommit": False}, link, {"ok": 1.0}, None)  # type: ignore[arg-type]
    session.commit()
    settle(core, session, {"commitTransaction": 1, "autocommit": False}, link, {"ok": 1.0}, None)  # type: ignore[arg-type]
    assert core.checked_in == []  # a committed transaction keeps it (the commit may be repeated)
    session.start_transaction(TransactionOptions())
    assert core.checked_in == [link]


def test_a_load_balancer_is_described_by_its_connections() -> None:
    balancer = ServerDescription(address=A, type=ServerType.LOAD_BALANCER)
    info = describe_server(A, balancer, None)
    assert info.load_balanced and info.is_writable and info.supports_retryable_writes
    assert info.max_wire_version == CLIENT_MAX_WIRE_VERSION
