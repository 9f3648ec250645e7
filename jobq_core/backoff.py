"""Retry delays: exponential backoff with full jitter (AWS architecture blog, 2015).

Full jitter spreads retries of jobs that failed together (one bad deploy) evenly over the
window instead of letting them stampede back at the same instant.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Backoff:
    base: float = 1.0  # seconds; the window after the first failed attempt
    cap: float = 3600.0  # the window never grows past this
    _rng: random.Random = field(default_factory=random.Random, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.base > 0:
            raise ValueError(f"backoff base must be > 0 seconds, got {self.base!r}")
        if not self.cap >= self.base:
            raise ValueError(f"backoff cap must be >= base ({self.base}), got {self.cap!r}")

    def window(self, attempt: int) -> float:
        """Upper bound of the delay after ``attempt`` (1-based) failed."""
        exponent = min(max(attempt - 1, 0), 64)  # 2**64 * base is past any sane cap
        return min(self.cap, self.base * 2.0**exponent)

    def delay(self, attempt: int) -> float:
        return self._rng.uniform(0.0, self.window(attempt))
