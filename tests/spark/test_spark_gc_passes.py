"""The executor reads' collector setting (adapters/spark/gc_passes.py): raised for a read,
restored after it, once, however reads overlap."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from mongo_sansio.adapters.spark.gc_passes import READ_THRESHOLD, fewer_gc_passes  # noqa: E402


@pytest.fixture(autouse=True)
def default_threshold() -> Iterator[tuple[int, ...]]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*saved)


def test_raised_inside_and_restored_after(default_threshold: tuple[int, ...]) -> None:
    with fewer_gc_passes():
        assert gc.get_threshold() == (READ_THRESHOLD, 10, 10)
    assert gc.get_threshold() == default_threshold


def test_restored_when_the_read_fails(default_threshold: tuple[int, ...]) -> None:
    with pytest.raises(ValueError), fewer_gc_passes():
        raise ValueError("the read failed")
    assert gc.get_threshold() == default_threshold


def test_a_higher_threshold_is_kept() -> None:
    gc.set_threshold(50_000, 5, 5)
    with fewer_gc_passes():
        assert gc.get_threshold() == (50_000, 5, 5)
    assert gc.get_threshold() == (50_000, 5, 5)


def test_overlapping_reads_restore_once_when_the_last_ends(
    default_threshold: tuple[int, ...],
) -> None:
    # a ends before b: the setting stays raised until b ends, then comes back as found
    a_inside, b_inside, a_done = threading.Event(), threading.Event(), threading.Event()
    seen: list[tuple[int, ...]] = []

    def read_a() -> None:
        with fewer_gc_passes():
            a_inside.set()
            b_inside.wait(5)
        a_done.set()

    def read_b() -> None:
        a_inside.wait(5)
        with fewer_gc_passes():
            b_inside.set()
            a_done.wait(5)
            seen.append(gc.get_threshold())

    threads = [threading.Thread(target=read_a), threading.Thread(target=read_b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == [(READ_THRESHOLD, 10, 10)]
    assert gc.get_threshold() == default_threshold
