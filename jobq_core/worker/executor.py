"""The executor: runs handlers and turns what they do into outcomes.

Synchronous handlers run on the pool's daemon threads (``pool.py``); ``async def``
handlers on one event loop thread (``jobq-asyncio``), started on first use. Whatever a run
ends with (returned, raised, timed out, lease lost, released at shutdown) becomes one
``Outcome`` record, handed to the completer's outbox: the executor writes nothing itself.

A run that timed out, lost its lease or was released is *abandoned*: its slot is freed at
once, ``ctx.cancelled`` tells its handler to stop (an async one is cancelled; a thread
cannot be killed), and whatever the handler returns later is discarded.

This is the seam for other pools: ``dispatch`` picks where a handler runs, and every way
back ends in ``_finished``. A process pool would be one more branch of ``dispatch`` that
delivers the handler's outcome to ``_finished``.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
import traceback
from typing import Any

from ..errors import LeaseLost
from ..new_jobs import encode_json
from ..registry import Registry
from ..types import RawJSON
from .completer import Outbox
from .pool import DaemonPool
from .runs import Failed, Lost, Outcome, Released, Run, RunState, Succeeded
from .state import State

log = logging.getLogger("jobq.worker")


class Executor:
    def __init__(self, state: State, outbox: Outbox, registry: Registry, pool: DaemonPool):
        self._state = state
        self._lock = state.lock
        self._outbox = outbox
        self._registry = registry
        self._pool = pool
        self._loop: asyncio.AbstractEventLoop | None = None

    def dispatch(self, run: Run) -> None:
        """Start ``run``'s handler (the run is already in the state's ``runs``)."""
        if isinstance(run.job.payload, RawJSON):  # written by something other than jobq
            self._finished(run, Failed("the stored payload is not valid JSON; not retried",
                                       give_up=True))
        elif run.task is None:
            self._finished(run, Failed(f"no handler for kind {run.job.kind!r} (this worker "
                                       f"knows: {', '.join(self._registry.kinds()) or 'none'})"))
        elif run.task.is_async:
            run.future = asyncio.run_coroutine_threadsafe(self._call_async(run), self._event_loop())
        else:
            self._pool.submit(self._call_sync, run)

    def check_timeouts(self) -> None:
        """Fail every run past its deadline (called by the claim loop on each turn)."""
        runs = self._state.timed_runs()
        if not runs:
            return
        now = time.monotonic()
        for run in runs:
            if now >= run.deadline:
                self.abandon(run, Failed(f"timed out after {run.task.timeout:g}s"))

    def abandon(self, run: Run, outcome: Failed | Released | Lost) -> None:
        """Stop waiting for a running handler: write ``outcome`` (nothing when ``Lost``)
        and free its slot. The handler is told through ``ctx.cancelled``. Does nothing when
        the run has already left RunState.RUNNING."""
        lost = isinstance(outcome, Lost)
        with self._lock:
            if run.state is not RunState.RUNNING:
                return
            self._state.leave_running(run, RunState.GONE if lost else RunState.FINISHING)
            run.outcome = outcome
            if lost:
                self._state.runs.pop(run.job.id, None)
        run.ctx.cancelled.set()
        if run.future is not None and run.task is not None and run.task.is_async:
            run.future.cancel()
        if not lost:
            self._outbox.post(run)
        else:
            self._state.count("lost")
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
        """Let the pool's idle threads and the event loop end (abandoned handlers still
        running are daemon threads: they do not hold the process open)."""
        self._pool.close()
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)

    def _call_sync(self, run: Run) -> None:
        if run.state is not RunState.RUNNING:  # abandoned while waiting for a thread
            return
        try:
            args = (run.job.payload, run.ctx) if run.task.wants_context else (run.job.payload,)
            outcome = _returned(run.task.fn(*args))
        except BaseException as e:  # noqa: BLE001 - a handler's failure is data, never ours
            outcome = _raised(e)
        self._finished(run, outcome)

    async def _call_async(self, run: Run) -> None:
        try:
            args = (run.job.payload, run.ctx) if run.task.wants_context else (run.job.payload,)
            outcome = _returned(await run.task.fn(*args))
        except BaseException as e:  # noqa: BLE001
            outcome = _raised(e)
        self._finished(run, outcome)

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="jobq-asyncio",
                                 daemon=True).start()
            return self._loop

    def _finished(self, run: Run, outcome: Outcome) -> None:
        """A handler ended. Ignored when the run was abandoned meanwhile."""
        if isinstance(outcome, Lost):  # its own heartbeat() or progress() learnt it
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


def _returned(result: Any) -> Succeeded | Failed:
    if result is None:
        return _SUCCEEDED_NONE
    try:
        encode_json(result, "the handler's result")
    except (TypeError, ValueError) as e:
        return Failed(f"{type(e).__name__}: {e}")
    return Succeeded(result)


# Most handlers return None: one shared record (building a frozen dataclass takes ~0.25 us).
_SUCCEEDED_NONE = Succeeded(None)


def _raised(e: BaseException) -> Failed | Lost:
    if isinstance(e, LeaseLost):
        return Lost()
    if isinstance(e, asyncio.CancelledError):
        return Failed("the handler was cancelled")
    return Failed("".join(traceback.format_exception(e)))
