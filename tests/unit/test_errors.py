"""The typed errors made from server replies (mongo_sansio/errors.py)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.errors import (
    CursorNotFound,
    DuplicateKeyError,
    ExecutionTimeout,
    MongoError,
    NotPrimaryError,
    RemoteProtocolError,
    ServerError,
    check_reply,
    server_error_from_reply,
)


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (11000, DuplicateKeyError),
        (11001, DuplicateKeyError),
        (12582, DuplicateKeyError),
        (50, ExecutionTimeout),
        (43, CursorNotFound),
        (10107, NotPrimaryError),
        (13435, NotPrimaryError),
        (11600, NotPrimaryError),
        (91, NotPrimaryError),
        (2, ServerError),
        (11000.0, DuplicateKeyError),
    ],
)
def test_the_code_picks_the_subclass(code: Any, kind: type[ServerError]) -> None:
    error = server_error_from_reply({"ok": 0, "code": code, "errmsg": "m", "codeName": "N"})
    assert type(error) is kind
    assert error.code == int(code) and error.code_name == "N" and error.errmsg == "m"


def test_without_a_code_the_message_decides_the_state_change_family() -> None:
    assert type(server_error_from_reply({"ok": 0, "errmsg": "not master"})) is NotPrimaryError
    assert type(server_error_from_reply({"ok": 0, "errmsg": "node is recovering"})) is (
        NotPrimaryError
    )
    assert type(server_error_from_reply({"ok": 0, "errmsg": "other"})) is ServerError


@pytest.mark.parametrize("code", [math.nan, math.inf, -math.inf, 11000.5, "11000", True, None])
def test_a_code_that_is_not_a_whole_number_is_dropped(code: Any) -> None:
    error = server_error_from_reply({"ok": 0, "code": code, "errmsg": "x"})
    assert type(error) is ServerError and error.code is None


def test_labels_and_details_are_kept() -> None:
    reply = {"ok": 0, "code": 2, "errmsg": "x", "errorLabels": ["A", 7, "B"]}
    error = server_error_from_reply(reply)
    assert error.error_labels == {"A", "B"} and error.has_error_label("A")
    assert error.details is reply


def test_check_reply_returns_an_ok_reply_and_raises_otherwise() -> None:
    for ok in (1, 1.0, True):
        reply = {"ok": ok}
        assert check_reply(reply) is reply
    for ok in (0, 0.0, False, None, "1", math.nan):
        with pytest.raises(ServerError):
            check_reply({"ok": ok})
    with pytest.raises(RemoteProtocolError):
        check_reply([1, 2])  # type: ignore[arg-type]


_values = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5),
    st.lists(st.one_of(st.text(max_size=3), st.integers()), max_size=3),
)  # fmt: skip


@given(st.dictionaries(st.sampled_from(["ok", "code", "codeName", "errmsg", "errorLabels"]),
                       _values))  # fmt: skip
def test_any_reply_gives_the_reply_or_a_library_error(reply: dict[str, Any]) -> None:
    try:
        check_reply(reply)
    except MongoError:
        pass
