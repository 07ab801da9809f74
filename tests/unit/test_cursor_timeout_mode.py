"""The CSOT spec's timeoutMode rules for cursor-opening operations, checked before anything
is sent (mongo_sansio.cursors.timeout_mode)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from mongo_sansio.cursors.timeout_mode import checked_timeout_mode, parse_timeout_mode, writes_out
from mongo_sansio.errors import ConfigurationError, InvalidOperation
from mongo_sansio.flow import GetContext


def opened() -> Any:
    yield "send"  # stands for the command the operation would send
    return "cursor"


def drive(mode: Any, deadline: float | None, **kwargs: Any) -> list[Any]:
    """What the flow asks for until it would send, answering GetContext with ``deadline``."""
    flow = checked_timeout_mode(mode, opened(), **kwargs)
    asked = [next(flow)]
    if isinstance(asked[0], GetContext):
        asked.append(flow.send(SimpleNamespace(deadline=deadline)))
    return asked


@pytest.mark.parametrize("mode", ["cursorLifetime", "iteration", "CURSOR_LIFETIME", "ITERATION"])
def test_a_timeout_mode_without_timeout_ms_is_refused_before_sending(mode: str) -> None:
    with pytest.raises(ConfigurationError, match="timeoutMode requires timeoutMS"):
        drive(mode, None)


def test_with_a_timeout_the_operation_runs() -> None:
    assert drive("cursorLifetime", 100.0)[-1] == "send"
    assert drive("iteration", float("inf"))[-1] == "send"  # timeoutMS=0 is a timeoutMS
    assert drive(None, None) == ["send"]  # not given: nothing checked


def test_tailable_cursors_take_iteration_only_and_out_merge_cursor_lifetime_only() -> None:
    with pytest.raises(InvalidOperation, match="tailable"):
        drive("cursorLifetime", 100.0, tailable=True)
    assert drive("iteration", 100.0, tailable=True)[-1] == "send"
    with pytest.raises(InvalidOperation, match=r"\$out or \$merge"):
        drive("iteration", 100.0, writes=True)
    assert drive("cursorLifetime", 100.0, writes=True)[-1] == "send"
    assert writes_out([{"$match": {}}, {"$merge": "x"}]) and not writes_out([{"$out": "x"}, {"$match": {}}])


def test_an_unknown_mode_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="cursorLifetime"):
        parse_timeout_mode("forever")
