"""The heartbeat (thread ``jobq-heartbeat``): keeps this worker's leases and its registry
entry alive, and takes part in the maintenance leader's election.

Every ``every`` seconds (a third of the shortest lease term in use) it extends the lease of
every run whose outcome is not written yet, in one transaction per lease term, learning
which leases were lost (those runs are abandoned) and which jobs an operator asked to
cancel (their ``ctx.cancelled`` is set); then it beats the worker registry, and takes or
renews the maintenance leader's lease (``maintenance/leader.py``: the leader's duties run
on a thread of their own). Every ``CHECK_EVERY`` seconds it
checks that the database is still the one opened (``Queue.check``): a worker whose file
was deleted or replaced stops, instead of working on data nobody else sees.

The thread never dies of an error: a database error is logged and retried next time, and
an unexpected one is logged with its traceback (once while it repeats) and retried too.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..errors import DatabaseUnavailable, JobqError
from ..queue import Queue
from ..types import PoolKind
from .executor import Executor
from .runs import Lost, Run, RunState
from .state import State

log = logging.getLogger("jobq.worker")
CHECK_EVERY = 2.0


class Heartbeat:
    def __init__(self, queue: Queue, state: State, executor: Executor,
                 elect: Callable[[], object], *,
                 worker_id: str, every: float, on_gone: Callable[[JobqError], None],
                 on_forgotten: Callable[[], None] = lambda: None):
        self._queue = queue
        self._state = state
        self._executor = executor
        self._elect = elect
        self._worker_id = worker_id
        self._every = every
        self._on_gone = on_gone
        self._on_forgotten = on_forgotten
        self._last_error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="jobq-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()

    def extend(self, runs: list[Run]) -> None:
        """Extend the leases of ``runs`` now (one transaction per lease term in use);
        abandon the runs whose lease was lost, tell those asked to cancel. Also used by the
        claimer, for runs whose task wants a longer lease than the claim granted."""
        by_lease: dict[float, list[Run]] = {}
        for run in runs:
            # A run that completed its job on the application's connection is not extended:
            # its row is locked by (PostgreSQL), or the database's write lock held by
            # (SQLite), that transaction until it ends, and once it commits the job is no
            # longer running: a heartbeat would wait for it, then report the lease lost.
            if not run.ctx.completed_on_conn:
                by_lease.setdefault(run.lease, []).append(run)
        for lease, group in by_lease.items():
            result = self._queue.extend_many([(r.job.id, r.token) for r in group], lease=lease)
            for run in group:
                if run.job.id in result.cancel_requested and not run.ctx.cancelled.is_set():
                    self._executor.cancel(run)
                if run.job.id in result.lost:
                    self._executor.abandon(run, Lost())

    def _loop(self) -> None:
        beat_due = time.monotonic() + self._every
        while not self._stop.wait(min(self._every, CHECK_EVERY)):
            self._state.beat_at = time.monotonic()
            try:
                self._queue.check()
            except DatabaseUnavailable as e:
                self._on_gone(e)
                return
            if time.monotonic() >= beat_due:
                beat_due = time.monotonic() + self._every
                self._guarded("heartbeat", self._beat)
                self._guarded("leader election", self._elect)

    def _beat(self) -> None:
        state = self._state
        with state.lock:
            runs = [r for r in state.runs.values() if r.state is not RunState.GONE]
        self.extend(runs)
        pool = self._executor.pool
        children = pool.children() if pool.kind is PoolKind.PROCESS else None
        if not self._queue.beat_worker(self._worker_id, busy=state.running, children=children):
            self._on_forgotten()  # silent too long, or forgotten by an operator: back again

    def _guarded(self, what: str, step: Callable[[], object]) -> None:
        try:
            step()
        except JobqError as e:
            log.warning("%s failed (will retry): %s", what, e)
        except Exception as e:  # a bug or a row jobq cannot read: never end the thread
            text = f"{what}: {type(e).__name__}: {e}"
            if text != self._last_error:
                log.exception("%s failed unexpectedly (will retry)", what)
            self._last_error = text
