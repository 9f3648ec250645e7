"""What the worker's threads share: its runs and their counters, the outcome counts, and
two events. Every part of the worker gets the same ``State``; none reaches into another
part's fields.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable

from .run_metrics import RunMetrics
from .runs import Run, RunState

# What ``count`` takes (the keys of ``State.counts``), and the outcome label each one has
# in the worker's metrics.
OUTCOME_LABELS = {"succeeded": "succeeded", "failed": "failed", "dead": "dead",
                  "lost": "lease_lost", "timed_out": "timed_out", "released": "released", "snoozed": "snoozed",
                  "cancelled": "cancelled"}


class State:
    """The runs of one worker, guarded by ``lock``.

    ``runs`` holds every run from its claim until its outcome is written (or until it is
    abandoned with nothing to write). ``running`` counts the runs in RunState.RUNNING, each of which
    holds one of the ``concurrency`` slots, and ``timed`` those of them with a deadline:
    the claim loop reads both on every turn, and counting costs less than scanning ``runs``
    (they change only under ``lock``; a read without it may be one step stale, which the
    next turn corrects).
    """

    def __init__(self, concurrency: int, kinds: Iterable[str] = ()):
        self.concurrency = concurrency
        # An RLock: Condition.notify (the completer's condition shares this lock) checks
        # ownership of an RLock in C: with+notify 0.59 us against 0.95 us on a Lock.
        self.lock = threading.RLock()
        self.runs: dict[int, Run] = {}
        self.running = 0
        self.timed = 0
        self.counts = dict.fromkeys(OUTCOME_LABELS, 0)
        self.metrics = RunMetrics(kinds)  # the same outcomes by queue and kind, and durations
        # Wakes the thread in Worker.run() (the claim loop, then the drain): a slot was
        # freed, an outcome written, or the worker is stopping.
        self.wake = threading.Event()
        self.stopping = threading.Event()
        # Monotonic times of the claim loop's and the heartbeat's latest turns (0: not yet):
        # a worker's liveness (observability/health.py).
        self.looped_at = 0.0
        self.beat_at = 0.0

    def free_slots(self) -> int:
        return self.concurrency - self.running

    def add(self, runs: list[Run]) -> None:
        """Take new runs, each RunState.RUNNING in a slot of its own."""
        with self.lock:
            for run in runs:
                self.runs[run.job.id] = run
                self.running += 1
                if run.deadline is not None:
                    self.timed += 1

    def leave_running(self, run: Run, state: RunState) -> None:
        """Move ``run`` out of RunState.RUNNING, freeing its slot (the caller holds ``lock`` and has
        seen it RunState.RUNNING). The handler's duration is taken here, once per run, and
        observed in the metrics when the run's outcome is counted."""
        run.state = state
        run.ran_for = run.took()
        self.running -= 1
        if run.deadline is not None:
            self.timed -= 1

    def running_runs(self) -> list[Run]:
        with self.lock:
            return [r for r in self.runs.values() if r.state is RunState.RUNNING]

    def timed_runs(self) -> list[Run]:
        """The RunState.RUNNING runs that have a deadline (none, without a scan, when ``timed`` is 0)."""
        if not self.timed:
            return []
        with self.lock:
            return [r for r in self.runs.values()
                    if r.state is RunState.RUNNING and r.deadline is not None]

    def count(self, run: Run, what: str) -> None:
        """``run`` ended with ``what`` (a key of ``counts``)."""
        self.count_all([run], what)

    def count_all(self, runs: list[Run], what: str) -> None:
        """Each of ``runs`` ended with ``what``: one lock for a batch of completions."""
        label = OUTCOME_LABELS[what]
        with self.lock:
            self.counts[what] += len(runs)
            self.metrics.ended(runs, label)
