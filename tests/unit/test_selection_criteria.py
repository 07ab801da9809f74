"""criteria_for: the criteria a selection request asks for, and which of them are the two made
once (their latency windows are remembered per topology description)."""

from __future__ import annotations

from typing import Any

from mongo_sansio.client import selecting
from mongo_sansio.flow import SelectServer
from mongo_sansio.selection import PRIMARY, Mode, ReadPreference

_NO_CORE: Any = None  # criteria_for reads the core only for deprioritized addresses


def test_any_primary_read_preference_gets_the_remembered_read_criteria() -> None:
    # a collection's read preference is often an equal copy of PRIMARY, not PRIMARY itself
    copy = ReadPreference(mode=Mode.PRIMARY)
    assert copy is not PRIMARY
    criteria = selecting.criteria_for(_NO_CORE, SelectServer(copy))
    assert criteria is selecting._PRIMARY_READ
    assert selecting.criteria_for(_NO_CORE, SelectServer()) is selecting._PRIMARY_READ


def test_writes_get_the_remembered_write_criteria() -> None:
    request = SelectServer(ReadPreference(mode=Mode.SECONDARY), for_writes=True)
    assert selecting.criteria_for(_NO_CORE, request) is selecting._WRITE


def test_other_read_preferences_get_criteria_of_their_own() -> None:
    for mode in (Mode.PRIMARY_PREFERRED, Mode.SECONDARY, Mode.NEAREST):
        criteria = selecting.criteria_for(_NO_CORE, SelectServer(ReadPreference(mode=mode)))
        assert criteria is not selecting._PRIMARY_READ
        assert criteria.read_preference.mode is mode
