"""Fixtures shared by the unit tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mongo_sansio.bson import _walkers
from mongo_sansio.bson._decode_parts import TRIE, new_root


@pytest.fixture
def fresh_trie() -> Iterator[None]:
    """An empty shape trie for the test (the shared one is put back after): the shape
    walkers and decoders a test expects are then exactly those its own documents made."""
    saved = TRIE[:]
    completions = _walkers.COMPLETIONS[0]
    TRIE[0], TRIE[1] = new_root(), 0
    _walkers.COMPLETIONS[0] = _walkers.COMPLETIONS_BUDGET
    yield
    TRIE[:] = saved
    _walkers.COMPLETIONS[0] = completions
