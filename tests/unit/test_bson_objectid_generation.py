"""ObjectId() generation: ids made in a row are distinct and ordered by their counter, the
time prefix follows the clock, and a forked child draws new random bytes (so a parent and
its child never make the same id)."""

from __future__ import annotations

import os
import time

import pytest

from mongo_sansio.bson import ObjectId


def test_ids_in_a_row_are_distinct_and_count_up() -> None:
    ids = [ObjectId().binary for _ in range(5000)]
    assert len(set(ids)) == len(ids)
    assert len({oid[4:9] for oid in ids}) == 1  # one process: one random part
    counters = [int.from_bytes(oid[9:], "big") for oid in ids]
    assert all((b - a) % 2**24 == 1 for a, b in zip(counters, counters[1:], strict=False))


def test_the_time_prefix_is_the_current_second() -> None:
    before = int(time.time())
    seconds = int.from_bytes(ObjectId().binary[:4], "big")
    assert before <= seconds <= int(time.time())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")
def test_a_forked_child_makes_ids_with_other_random_bytes() -> None:
    parent = ObjectId().binary
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: send one id and leave at once
        try:
            os.write(write_end, ObjectId().binary)
        finally:
            os._exit(0)
    os.close(write_end)
    child = os.read(read_end, 12)
    os.close(read_end)
    os.waitpid(pid, 0)
    assert len(child) == 12 and child[4:9] != parent[4:9]
