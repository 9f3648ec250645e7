"""Runs stopped from outside, learnt within about a second: an operator's terminate
(``Queue.cancel(id, terminate=True)``), a cancel, a lease taken back.

A terminate ends the job ``cancelled`` in the store at once, its attempt recorded and its
token dropped: whatever the run does later (complete, fail, heartbeat) is fenced out. The
worker finds out here. The claim loop calls ``check()`` on each of its turns (at least
every 0.25 s while handlers run), which at most every ``EVERY`` seconds reads, in one
statement (``Queue.check_leases``), whether the runs that have lasted that long still
hold their jobs, and which an operator asked to cancel. A run that no longer holds its
job is abandoned (``Executor.abandon``): the pool stops its handler (a process-pool child
gets SIGTERM, then SIGKILL after its grace, and is replaced; an ``async def`` handler is
cancelled on its loop; a thread cannot be stopped: its handler is told through
``ctx.cancelled`` and its result discarded). A run asked to cancel is told, as the
heartbeat would tell it a beat later.

Runs younger than ``EVERY`` are not read: a drain of short jobs never pays for this.
"""
from __future__ import annotations

import logging
import time

from ..errors import JobqError
from ..queue import Queue
from ..types import JobStatus
from .executor import Executor
from .runs import Lost, RunState
from .state import State

log = logging.getLogger("jobq.worker")

EVERY = 0.5  # seconds between reads; a run is read once it has lasted this long


class Terminations:
    def __init__(self, queue: Queue, state: State, executor: Executor):
        self._queue = queue
        self._state = state
        self._executor = executor
        self._next = 0.0

    def check(self) -> None:
        """Read the long runs' leases if ``EVERY`` has passed; stop those gone."""
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + EVERY
        state = self._state
        with state.lock:
            if not state.running:
                return
            # A run that completed its job on the application's connection may hold it no
            # longer because that transaction committed: the completer finds out.
            runs = [r for r in state.runs.values() if r.state is RunState.RUNNING
                    and now - r.started >= EVERY and not r.ctx.completed_on_conn]
        if not runs:
            return
        try:
            found = self._queue.check_leases([(r.job.id, r.token) for r in runs])
        except JobqError as e:  # the heartbeat reports outages; look again next time
            log.debug("reading the leases of %d run(s) failed: %s", len(runs), e)
            return
        for run in runs:
            if run.job.id in found.lost:
                self._executor.abandon(run, Lost(terminated=self._terminated(run.job.id)))
            elif run.job.id in found.cancel_requested and not run.ctx.cancelled.is_set():
                self._executor.cancel(run)

    def _terminated(self, job_id: int) -> bool:
        """Whether the job a run lost was cancelled (an operator's terminate), rather than
        reaped or taken back: for the log and the counts only."""
        try:
            job = self._queue.get(job_id)
        except JobqError:
            return False
        return job is not None and job.status == JobStatus.CANCELLED
