"""The claimer: the claim loop, run by the thread that called ``Worker.run()``.

It claims as many jobs as there are free slots in one statement, turns them into runs and
hands them to the executor; on each turn it also has the executor enforce timeouts, and
stops the runs whose jobs were terminated or taken back meanwhile (``terminations.py``).
While completions wait to be written it leaves the claim to the completer, which claims
for the slots they free in the same transaction (``adopt`` serves both).

Idle wait: with nothing running, it sleeps on the store's change signal
(``queue.watch()``) until another process commits, the next delayed job or retry becomes
ready, the next look for work is due anyway (``idle_claim_interval``), or the worker is
stopped. While some slots are busy it looks for work every ``poll_interval`` and is woken
early when a written outcome frees a slot.

The timer for delayed jobs: after a claim came up short (no more ready jobs), the claimer
asks the store when the next pending job becomes ready (``Queue.next_run_at``, a loose
index scan on either store) and claims again at that moment, so a job delayed by 0.2 s or a
retry after 1 s backoff starts on time rather than at the next ``idle_claim_interval``. A
change signal (new work, possibly delayed) makes it ask again; while handlers are busy it
asks at most every ``DUE_REFRESH`` seconds.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from ..errors import JobqError
from ..queue import Queue
from ..registry import JobContext, Registry
from ..types import Job
from .outbox import Outbox
from .executor import Executor
from .runs import Run
from .state import State
from .terminations import Terminations

log = logging.getLogger("jobq.worker")

DUE_REFRESH = 0.1  # busy: ask for the next run_at at most this often (a round trip each)
DUE_LATE = 0.001  # claim this long after a run_at: never before it, by the queue's clock


class Claimer:
    def __init__(self, queue: Queue, registry: Registry, state: State, outbox: Outbox,
                 executor: Executor, extend: Callable[[list[Run]], None], *, worker_id: str,
                 queues: Sequence[str] | None, lease: float, poll_interval: float,
                 idle_claim_interval: float):
        self._queue = queue
        self._registry = registry
        self._state = state
        self._outbox = outbox
        self._executor = executor
        self._extend = extend
        self._worker_id = worker_id
        self._queues = queues
        self._lease = lease
        self._poll_interval = poll_interval
        self._idle_claim_interval = idle_claim_interval
        # The tasks' own attempt limits, stored on each job as it is claimed, so the
        # reaper and the monitor apply them too (TRY reads 3/3, not 3/20).
        self.attempt_limits = {kind: task.max_attempts for kind in registry.kinds()
                               if (task := registry.get(kind)) and task.max_attempts} or None
        self.lock = threading.Lock()  # one claim at a time: slots are never overbooked
        self._backlog = True  # the last claim filled every free slot: more may be ready
        self._due: float | None = None  # monotonic time the next delayed job becomes ready
        self._due_stale = True  # a claim came up short since ``_due`` was read
        self._due_read = -1e9  # monotonic time of that read
        self._watch = queue.watch()
        self._terminations = Terminations(queue, state, executor)

    def loop(self, burst: bool) -> None:
        """Claim and start jobs until the worker stops (with ``burst``: until no job is
        ready and none is running)."""
        state = self._state
        changed = True
        next_claim = 0.0
        while not state.stopping.is_set():
            state.wake.clear()
            state.looped_at = time.monotonic()
            self._executor.check_timeouts()
            self._terminations.check()
            free = state.free_slots()
            # While completions wait to be written, leave the claim to the completer: it
            # claims for the freed slots in the same transaction (one commit, not two).
            if free > 0 and not self._outbox.completions_pending():
                changed = self._changed(0.0) or changed
                now = time.monotonic()
                idle = not state.runs
                due = self._due is not None and now >= self._due
                if self._backlog or changed or due or now >= next_claim or (burst and idle):
                    if changed or due:
                        self._due, self._due_stale = None, True  # read it again
                    changed = False
                    next_claim = now + self._idle_claim_interval
                    got = self._claim()
                    if not got and burst and not state.runs:
                        if not self._held_by_limits():
                            return
                        # Ready jobs wait for a limit (another worker's running jobs, the
                        # next rate window): look again when something changes, or soon.
                        changed = self._changed(self._idle_claim_interval)
                        continue
                    if got:
                        continue
                if not burst:
                    self._read_due(idle=not state.runs)
                if not state.runs and not burst:
                    # Nothing running: sleep until another process commits, the next
                    # delayed job is ready, the next look for work is due, or the worker
                    # is woken.
                    until = next_claim if self._due is None else min(next_claim, self._due)
                    changed = self._changed(max(0.0, until - time.monotonic()))
                    continue
            if not state.stopping.is_set():  # (the top of the loop cleared its wake-up)
                state.wake.wait(self._wait_time(free > 0))

    def interrupt(self) -> None:
        """Wake the loop wherever it sleeps (safe from any thread or signal handler)."""
        self._state.wake.set()
        self._watch.wake()

    def close(self) -> None:
        self._watch.close()

    def adopt(self, jobs: list[Job], asked: int) -> int:
        """Start handlers for the jobs a claim of ``asked`` slots returned (the caller
        holds ``lock``). A claim that filled every slot asked for suggests more are ready.

        A claim that was in flight when the worker was stopped (the completer's, in its
        own thread) hands its jobs back unstarted: the executor may have drained already,
        and nothing would write their outcomes. ``Worker.run`` takes ``lock`` once after
        the stop, before it drains, so every adopt either started its runs before the
        drain looks or sees the stop."""
        if jobs and self._state.stopping.is_set():
            self._hand_back(jobs)
            return 0
        if asked > 0:
            self._backlog = len(jobs) == asked
            if not self._backlog:
                self._due_stale = True
        runs = self._new_runs(jobs)
        self._state.add(runs)
        longer = [r for r in runs if r.lease != self._lease]
        if longer:
            self._extend(longer)
        self._executor.dispatch(runs)
        return len(jobs)

    def _hand_back(self, jobs: list[Job]) -> None:
        for job in jobs:
            assert job.token is not None, "a claimed job carries its claim's token"
            try:
                self._queue.release(job.id, job.token)
            except JobqError as e:  # LeaseLost included: its lease runs out, as after a crash
                log.warning("job %d claimed as the worker stopped, not handed back: %s",
                            job.id, e)
        log.info("handed back %d job(s) claimed as the worker stopped", len(jobs))

    def _claim(self) -> int:
        with self.lock:
            free = self._state.free_slots()
            if free <= 0:
                return 0
            try:
                jobs = self._queue.claim_many(self._worker_id, free, queues=self._queues,
                                              lease=self._lease,
                                              attempt_limits=self.attempt_limits)
            except JobqError as e:
                log.warning("claim failed, retrying: %s", e)
                self._state.stopping.wait(min(1.0, self._lease / 3))
                return 0
            return self.adopt(jobs, free)

    def expect_retry(self) -> None:
        """This worker scheduled a retry: read the next run_at again before sleeping (its
        own commit may not wake its watch)."""
        self._due_stale = True

    def _held_by_limits(self) -> bool:
        """Whether ready jobs of a limited (not paused) queue this worker serves are
        waiting: a burst worker goes on until they have run. Jobs of a paused queue count
        as not ready, so a burst ends with only them left."""
        try:
            stats = self._queue.stats(window=1.0)
        except JobqError as e:
            log.warning("reading the queues' limits failed: %s", e)
            return True  # look again after a wait
        return any(qs.limited and not qs.paused
                   and (qs.held or (qs.oldest_pending_at is not None  # a held key: wait
                                    and qs.oldest_pending_at <= stats.now))
                   and (self._queues is None or name in self._queues)
                   for name, qs in stats.queues.items())

    def _new_runs(self, jobs: list[Job]) -> list[Run]:
        """The runs of one claim's jobs, which start now."""
        now = time.monotonic()
        task_of = self._registry.get
        runs = []
        for job in jobs:
            task = task_of(job.kind)
            lease = task.lease if task and task.lease else self._lease
            token = job.token
            assert token is not None, "a claimed job carries its claim's token"
            ctx = JobContext(self._queue, job.id, token, job.attempts, self._worker_id,
                             job.kind, lease)
            deadline = now + task.timeout if task and task.timeout else None
            runs.append(Run(job, token, task, ctx, lease, now, deadline))
        return runs

    def _read_due(self, idle: bool) -> None:
        """Read when the next delayed job becomes ready, if a short claim made the last
        answer stale (while busy, at most every ``DUE_REFRESH`` seconds)."""
        now = time.monotonic()
        if not self._due_stale or (not idle and now - self._due_read < DUE_REFRESH):
            return
        self._due_stale, self._due_read = False, now
        try:
            run_at = self._queue.next_run_at(queues=self._queues)
        except JobqError as e:  # the next claim reports the outage; until then, no timer
            log.debug("reading the next run_at failed: %s", e)
            self._due = None
            return
        if run_at is None:
            self._due = None
        else:  # the queue's clock (the server's on PostgreSQL) to this host's monotonic one
            self._due = time.monotonic() + max(0.0, run_at - self._queue.clock.now()) + DUE_LATE

    def _changed(self, timeout: float) -> bool:
        """Whether another process may have committed, waiting up to ``timeout`` (not at
        all once the worker is stopping: the stop's one wake-up may have gone to an
        earlier look, and the loop then ends instead of sleeping)."""
        if timeout > 0 and self._state.stopping.is_set():
            return True
        try:
            return self._watch.wait(timeout)
        except JobqError as e:
            log.warning("watching the database failed: %s", e)
            self._state.stopping.wait(min(1.0, timeout))
            return True

    def _wait_time(self, polling: bool) -> float:
        """How long the loop may sleep: ``poll_interval`` while slots are free (0.25 s when
        none is), and never past the next deadline of a running handler."""
        wait = self._poll_interval if polling else 0.25
        if polling and self._due is not None:
            wait = min(wait, max(0.0, self._due - time.monotonic()))
        timed = self._state.timed_runs()
        if timed:
            first = min(r.deadline for r in timed if r.deadline is not None)  # all have one
            wait = min(wait, max(0.0, first - time.monotonic()))
        return wait
