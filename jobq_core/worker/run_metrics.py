"""A worker's own metrics: outcome counts and handler durations by queue and kind, since it
started. Plain integers, counted under the worker's state lock on the hot path; the
exporter (``jobq_core/prometheus.py``) renders a ``snapshot``. Names and buckets:
``jobq_core/metrics.py``."""
from __future__ import annotations

import bisect
from collections.abc import Iterable

from ..metrics import BUCKETS, MAX_KIND_LABELS, MAX_QUEUE_LABELS, OTHER_LABEL


class RunMetrics:
    """A worker's outcome counts and handler durations by queue and kind. Not locked: the
    worker calls it under its state lock, and ``snapshot`` copies under the same lock.

    The labels are bounded, whatever the database holds: a kind this worker has no handler
    for (or past the first ``MAX_KIND_LABELS`` of its registry, in sorted order) and a
    queue first seen after ``MAX_QUEUE_LABELS`` others are counted as ``OTHER_LABEL``."""

    __slots__ = ("outcomes", "durations", "_kinds", "_queues")

    def __init__(self, kinds: Iterable[str] = ()) -> None:
        self.outcomes: dict[tuple[str, str, str], int] = {}  # (queue, kind, outcome) -> n
        # (queue, kind) -> [count per bucket (the last: above every bound)..., sum]
        self.durations: dict[tuple[str, str], list] = {}
        self._kinds = {k: k for k in sorted(kinds)[:MAX_KIND_LABELS]}
        self._queues: dict[str, str] = {}

    def _labels(self, queue: str, kind: str) -> tuple[str, str]:
        q = self._queues.get(queue)
        if q is None:
            q = queue if len(self._queues) < MAX_QUEUE_LABELS else OTHER_LABEL
            if q is queue:
                self._queues[queue] = queue
        return q, self._kinds.get(kind, OTHER_LABEL)

    def outcome(self, queue: str, kind: str, outcome: str) -> None:
        queue, kind = self._labels(queue, kind)
        key = (queue, kind, outcome)
        self.outcomes[key] = self.outcomes.get(key, 0) + 1

    def duration(self, queue: str, kind: str, seconds: float) -> None:
        queue, kind = self._labels(queue, kind)
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
