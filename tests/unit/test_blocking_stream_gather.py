"""BlockingStream.send_all: every byte of every buffer reaches the socket once and in order,
whatever the socket accepts per call (short sendmsg writes cut a buffer anywhere), for
bytes, bytearrays and memoryviews of other formats, and small messages go joined."""

from __future__ import annotations

import array
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.transports.blocking import BlockingStream


class ShortWritingSocket:
    """Takes at most ``limits[i]`` bytes on the i-th call (cycling)."""

    def __init__(self, limits: list[int]) -> None:
        self.limits = limits
        self.calls = 0
        self.received = bytearray()
        self.sendmsg_calls = 0

    def gettimeout(self) -> None:
        return None

    def sendmsg(self, buffers: list[Any]) -> int:
        self.sendmsg_calls += 1
        assert len(buffers) <= 512
        data = b"".join(bytes(b) for b in buffers)
        limit = self.limits[self.calls % len(self.limits)]
        self.calls += 1
        taken = data[: max(1, limit)]
        self.received += taken
        return len(taken)

    def sendall(self, data: Any) -> None:
        self.received += bytes(data)


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=2, max_size=40),
    limits=st.lists(st.integers(1, 5000), min_size=1, max_size=5),
    seed=st.integers(0, 2**16),
)
def test_every_byte_is_sent_once_in_order(sizes: list[int], limits: list[int], seed: int) -> None:
    rng = random.Random(seed)
    buffers: list[Any] = []
    for i, size in enumerate(sizes):
        data = bytes(rng.randrange(256) for _ in range(size))
        kind = i % 3
        buffers.append(data if kind == 0 else bytearray(data) if kind == 1 else memoryview(data))
    sock = ShortWritingSocket(limits)
    BlockingStream(sock, "test", None).send_all(buffers)  # type: ignore[arg-type]
    assert bytes(sock.received) == b"".join(bytes(b) for b in buffers)


def test_many_buffers_and_a_memoryview_of_another_format() -> None:
    words = array.array("i", range(50_000))  # 200,000 bytes: over the join size, gathered
    buffers: list[Any] = [b"head", memoryview(words), *[b"x%d" % i for i in range(1500)]]
    sock = ShortWritingSocket([70_000])
    BlockingStream(sock, "test", None).send_all(buffers)  # type: ignore[arg-type]
    assert bytes(sock.received) == b"".join(bytes(b) for b in buffers)
    assert sock.sendmsg_calls >= 4  # 1502 buffers: at least three chunks of 512, and short writes
