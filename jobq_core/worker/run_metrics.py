"""A worker's own metrics: outcome counts and handler durations by queue and kind, since it
started. Plain integers, counted under the worker's state lock when outcomes are counted
(a batch of completions at a time); the exporter (``jobq_core/observability/prometheus.py``) renders a
``snapshot``. Names and buckets: ``jobq_core/observability/metric_names.py``."""
from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..observability.metric_names import BUCKETS, MAX_KIND_LABELS, MAX_QUEUE_LABELS, OTHER_LABEL, OUTCOMES

if TYPE_CHECKING:
    from .runs import Run

_OUTCOME_INDEX = {name: i for i, name in enumerate(OUTCOMES)}


class _Series:
    """One (queue, kind) label pair's counts: runs by outcome (in ``OUTCOMES`` order), and
    handler durations as a histogram (a count per bucket, the last above every bound, then
    the sum)."""

    __slots__ = ("outcomes", "durations")

    def __init__(self) -> None:
        self.outcomes = [0] * len(OUTCOMES)
        self.durations: list[float] = [0] * (len(BUCKETS) + 1) + [0.0]

    def copy(self) -> _Series:
        c = _Series()
        c.outcomes, c.durations = list(self.outcomes), list(self.durations)
        return c


class RunMetrics:
    """A worker's outcome counts and handler durations by queue and kind. Not locked: the
    worker calls it under its state lock, and ``snapshot`` copies under the same lock.

    The labels are bounded, whatever the database holds: a kind this worker has no handler
    for (or past the first ``MAX_KIND_LABELS`` of its registry, in sorted order) and a
    queue first seen after ``MAX_QUEUE_LABELS`` others are counted as ``OTHER_LABEL``."""

    __slots__ = ("_series", "_kinds", "_queues")

    def __init__(self, kinds: Iterable[str] = ()) -> None:
        # (queue label, kind label) -> its counts. A job whose queue and kind are their own
        # labels finds its series with one lookup of (queue, kind); the others resolve
        # their labels first (``_series_of``).
        self._series: dict[tuple[str, str], _Series] = {}
        self._kinds = {k: k for k in sorted(kinds)[:MAX_KIND_LABELS]}
        self._queues: dict[str, str] = {}

    def _series_of(self, queue: str, kind: str) -> _Series:
        q = self._queues.get(queue)
        if q is None:
            q = queue if len(self._queues) < MAX_QUEUE_LABELS else OTHER_LABEL
            if q is queue:
                self._queues[queue] = queue
        labels = (q, self._kinds.get(kind, OTHER_LABEL))
        s = self._series.get(labels)
        if s is None:
            s = self._series[labels] = _Series()
        return s

    def ended(self, runs: list[Run], outcome: str) -> None:
        """Each of ``runs`` ended with ``outcome`` (a name in ``OUTCOMES``): counted, and its
        handler's duration (``Run.ran_for``, set when it stopped running) observed."""
        i = _OUTCOME_INDEX[outcome]
        series = self._series
        for run in runs:
            job = run.job
            s = series.get((job.queue, job.kind)) or self._series_of(job.queue, job.kind)
            s.outcomes[i] += 1
            took = run.ran_for
            if took is not None:
                h = s.durations
                h[bisect.bisect_left(BUCKETS, took)] += 1
                h[-1] += took

    @property
    def outcomes(self) -> dict[tuple[str, str, str], int]:
        """(queue, kind, outcome) -> runs, for the outcomes that occurred."""
        return {(q, k, name): n for (q, k), s in self._series.items()
                for name, n in zip(OUTCOMES, s.outcomes) if n}

    @property
    def durations(self) -> dict[tuple[str, str], list[float]]:
        """(queue, kind) -> [count per bucket (the last: above every bound)..., sum], for
        the pairs with at least one observed duration."""
        return {labels: list(s.durations) for labels, s in self._series.items()
                if any(s.durations[:-1])}

    def snapshot(self) -> RunMetrics:
        copy = RunMetrics()
        copy._series = {labels: s.copy() for labels, s in self._series.items()}
        return copy
