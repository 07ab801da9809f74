"""Round-trip-time bookkeeping for one server's monitor (server-monitoring.md, "Measuring RTT").

Inputs: RTT samples in seconds (from handshakes, polling hellos, or the streaming protocol's
dedicated RTT connection).  Outputs: the moving average (``average``, the ServerDescription's
``round_trip_time``) and the minimum of the last ten samples (``minimum``, reported as 0 until
two samples exist).  Immutable: :meth:`RoundTripTimes.add` returns a new value.
"""

from __future__ import annotations

import math
from typing import Final

import attrs

from mongo_sansio.errors import LocalProtocolError

__all__ = ["RoundTripTimes", "RTT_ALPHA", "RTT_WINDOW"]

RTT_ALPHA: Final = 0.2
"""Weight of a new sample in the exponentially weighted moving average (server-selection.md)."""
RTT_WINDOW: Final = 10
"""How many recent samples the minimum RTT looks at."""


@attrs.frozen(kw_only=True)
class RoundTripTimes:
    """The moving average and recent samples of one server's RTT; empty after a failed check."""

    average: float | None = None
    samples: tuple[float, ...] = ()

    def add(self, sample: float) -> RoundTripTimes:
        """Fold in one sample (seconds); :class:`LocalProtocolError` if it is negative or not
        finite."""
        if not isinstance(sample, int | float) or not math.isfinite(sample) or sample < 0:
            raise LocalProtocolError(f"an RTT sample must be a finite number >= 0, got {sample!r}")
        sample = float(sample)
        if self.average is None:
            average = sample
        else:
            average = RTT_ALPHA * sample + (1 - RTT_ALPHA) * self.average
        return RoundTripTimes(average=average, samples=(*self.samples, sample)[-RTT_WINDOW:])

    @property
    def minimum(self) -> float | None:
        """The smallest of the recent samples: None without samples, 0.0 with only one."""
        if not self.samples:
            return None
        if len(self.samples) < 2:
            return 0.0
        return min(self.samples)
