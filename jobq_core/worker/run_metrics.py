"""A worker's own metrics: outcome counts and handler durations by queue and kind, since it
started. Plain integers, counted under the worker's state lock on the hot path; the
exporter (``jobq_core/prometheus.py``) renders a ``snapshot``. Names and buckets:
``jobq_core/metrics.py``."""
from __future__ import annotations

import bisect

from ..metrics import BUCKETS


class RunMetrics:
    """A worker's outcome counts and handler durations by queue and kind. Not locked: the
    worker calls it under its state lock, and ``snapshot`` copies under the same lock."""

    __slots__ = ("outcomes", "durations")

    def __init__(self) -> None:
        self.outcomes: dict[tuple[str, str, str], int] = {}  # (queue, kind, outcome) -> n
        # (queue, kind) -> [count per bucket (the last: above every bound)..., sum]
        self.durations: dict[tuple[str, str], list] = {}

    def outcome(self, queue: str, kind: str, outcome: str) -> None:
        key = (queue, kind, outcome)
        self.outcomes[key] = self.outcomes.get(key, 0) + 1

    def duration(self, queue: str, kind: str, seconds: float) -> None:
        h = self.durations.get((queue, kind))
        if h is None:
            h = self.durations[(queue, kind)] = [0] * (len(BUCKETS) + 1) + [0.0]
        h[bisect.bisect_left(BUCKETS, seconds)] += 1
        h[-1] += seconds

    def snapshot(self) -> RunMetrics:
        copy = RunMetrics()
        copy.outcomes = dict(self.outcomes)
        copy.durations = {k: list(v) for k, v in self.durations.items()}
        return copy
