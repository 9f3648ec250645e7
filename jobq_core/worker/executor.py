"""The executor: starts handlers in the pool and turns what they do into outcomes.

Where a handler runs is the pool's business (``pool.py``: threads, or child processes);
whatever a run ends with (returned, raised, timed out, lease lost, released at shutdown)
becomes one ``Outcome`` record here, handed to the completer's outbox: the executor writes
nothing itself.

A run that timed out, lost its lease or was released is *abandoned*: its slot is freed at
once, ``ctx.cancelled`` tells its handler to stop, the pool stops it if it can (an async
handler is cancelled, a child process killed; a thread cannot be), and whatever the
handler returns later is discarded.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ..registry import Registry
from ..types import RawJSON
from .outbox import Outbox
from .pool import Pool
from .runs import Failed, Lost, Outcome, Released, Run, RunState, Succeeded
from .state import State

log = logging.getLogger("jobq.worker")


class Executor:
    def __init__(self, state: State, outbox: Outbox, registry: Registry, pool: Pool):
        self._state = state
        self._lock = state.lock
        self._outbox = outbox
        self._registry = registry
        self.pool = pool

    def start(self, fail: Callable[[str], None]) -> None:
        """Start the pool (a process pool starts its children and waits for the first);
        ``fail(reason)``: the pool cannot go on, the worker must stop."""
        self.pool.start(self._finished, fail)

    def dispatch(self, runs: list[Run]) -> None:
        """Start the handlers of ``runs`` (already in the state's ``runs``), handed to the
        pool together: the thread pool wakes one thread for them, not one a run."""
        ready = []
        for run in runs:
            if isinstance(run.job.payload, RawJSON):  # written by something other than jobq
                self._finished(run, Failed("the stored payload is not valid JSON; not "
                                           "retried", give_up=True))
            elif run.task is None:
                self._finished(run, Failed(
                    f"no handler for kind {run.job.kind!r} (this worker knows: "
                    f"{', '.join(self._registry.kinds()) or 'none'})"))
            else:
                ready.append(run)
        if ready:
            self.pool.run(ready)

    def check_timeouts(self) -> None:
        """Fail every run past its deadline (called by the claim loop on each turn)."""
        runs = self._state.timed_runs()
        if not runs:
            return
        now = time.monotonic()
        for run in runs:
            # each has a deadline, set from its task's timeout (the checks are for the reader)
            if run.deadline is not None and now >= run.deadline and run.task is not None:
                self.abandon(run, Failed(f"timed out after {run.task.timeout:g}s",
                                         timed_out=True))

    def cancel(self, run: Run) -> None:
        """An operator asked to cancel ``run``'s job: tell its handler."""
        run.ctx.cancelled.set()
        if run.state is RunState.RUNNING:
            self.pool.cancel(run)

    def abandon(self, run: Run, outcome: Failed | Released | Lost) -> None:
        """Stop waiting for a running handler: write ``outcome`` (nothing when ``Lost``)
        and free its slot. The handler is told through ``ctx.cancelled`` and stopped if the
        pool can. Does nothing when the run has already left RunState.RUNNING."""
        # A run that completed its job on the application's connection may have committed
        # that completion: the completer reads the job to learn what to count.
        lost = isinstance(outcome, Lost) and not run.ctx.completed_on_conn
        with self._lock:
            if run.state is not RunState.RUNNING:
                return
            self._state.leave_running(run, RunState.GONE if lost else RunState.FINISHING)
            run.outcome = outcome
            if lost:
                self._state.runs.pop(run.job.id, None)
        run.ctx.cancelled.set()
        if run.task is not None:
            self.pool.stop(run)
        if not lost:
            self._outbox.post(run)
        elif isinstance(outcome, Lost) and outcome.terminated:
            self._state.count(run, "cancelled")
            log.info("%s terminated by an operator after %.3fs: its handler was told to stop, "
                     "and stopped where the pool can", run.describe(), run.took())
        else:
            self._state.count(run, "lost")
            log.warning("%s lease lost after %.3fs (reaped or taken over): the handler was "
                        "told to stop; its result will be discarded", run.describe(), run.took())
        self._state.wake.set()

    def drain(self, grace: float) -> None:
        """Let running handlers finish within ``grace`` seconds, then release the rest."""
        state = self._state
        deadline = time.monotonic() + grace
        while state.running and time.monotonic() < deadline:
            self.check_timeouts()
            state.wake.wait(min(0.1, max(0.0, deadline - time.monotonic())))
            state.wake.clear()
        for run in state.running_runs():
            self.abandon(run, Released())

    def close(self) -> None:
        self.pool.close()

    def kill(self) -> None:
        """The worker exits at once (second signal): the pool ends what it runs."""
        self.pool.kill()

    def _finished(self, run: Run, outcome: Outcome) -> None:
        """A handler ended (called by the pool, from any thread). Ignored when the run was
        abandoned meanwhile."""
        if isinstance(outcome, Lost):  # its own heartbeat(), progress() or complete() learnt it
            self.abandon(run, outcome)
            return
        with self._lock:
            if run.state is not RunState.RUNNING:
                if isinstance(outcome, Succeeded):
                    log.info("%s: handler returned after the run was abandoned; result "
                             "discarded", run.describe())
                return
            self._state.leave_running(run, RunState.FINISHING)
            run.outcome = outcome
            self._outbox.post_locked(run)
