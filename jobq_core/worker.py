"""Worker: claim -> run handler -> heartbeat -> complete/fail, in N concurrent slots.

Threads, and what each one owns:

* the caller of ``run()``: claims as many jobs as there are free slots in one statement
  (when no completion is waiting to be written), hands them to handlers, enforces
  timeouts, and on stop drains and releases; when idle it sleeps until another process
  writes the database (``wakeup.FileWatch``);
* ``jobq-heartbeat``: every third of the lease, extends every in-flight lease in one
  transaction (learning which were lost or asked to cancel), beats the worker registry,
  and runs the reaper at least once per lease term;
* ``jobq-completer``: writes outcomes. Completions that arrive while a write is under way
  are batched into the next transaction, together with the claim of jobs for the slots
  they free (one commit instead of two). When a commit is slow (an fsync under
  synchronous=FULL), it waits up to half a commit's time for the handlers still running,
  so one commit carries them all; a fast one never waits;
* handler threads (a pool), and one event loop thread for ``async def`` handlers.

Invariants: a job's lease is extended until its outcome is written; a run whose lease was
lost, that timed out, or that was released is *abandoned*: whatever its handler returns
later is discarded, and the store's fencing token rejects it anyway. Delivery is
at-least-once; handlers must be idempotent.
"""
from __future__ import annotations

import asyncio
import enum
import logging
import os
import secrets
import signal
import socket
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .checks import check_int, check_seconds
from .errors import JobqError, LeaseLost
from .maintenance import Reaper
from .pool import DaemonPool
from .queue import Queue, encode_json
from .registry import JobContext, Registry, Task
from .error_groups import first_line
from .textsafe import clean
from .types import Job, JobStatus, RawJSON

log = logging.getLogger("jobq.worker")



class RunState(enum.Enum):
    RUNNING = "running"  # its handler's outcome is awaited
    FINISHING = "finishing"  # it has an outcome that the completer has not written yet
    GONE = "gone"  # its outcome is written, or it was abandoned with nothing to write


_RUNNING, _FINISHING, _GONE = RunState.RUNNING, RunState.FINISHING, RunState.GONE
_GROUP_COMMIT_AFTER = 0.0005  # a write slower than this makes the completer batch harder
_GROUP_COMMIT_MAX = 0.005  # never hold an outcome back longer than this


@dataclass(frozen=True, slots=True)
class Succeeded:
    """The handler returned ``result`` (checked to be JSON)."""
    result: Any


@dataclass(frozen=True, slots=True)
class Failed:
    """The run failed with ``error``; ``give_up``: the job goes dead, attempts left or not."""
    error: str
    give_up: bool = False


@dataclass(frozen=True, slots=True)
class Released:
    """Stopped unfinished at shutdown: back to pending at once, the attempt not counted."""


@dataclass(frozen=True, slots=True)
class Lost:
    """The run's lease is lost (reaped or taken over): there is nothing to write."""


Outcome = Succeeded | Failed | Released | Lost


@dataclass(eq=False, slots=True)
class _Run:
    job: Job
    task: Task | None
    ctx: JobContext
    lease: float
    started: float  # monotonic
    deadline: float | None  # monotonic; None: no timeout
    state: RunState = RunState.RUNNING
    future: Any = None
    outcome: Outcome | None = None


class Worker:
    """Runs jobs from ``queue`` with the handlers of ``registry``.

    ``concurrency`` slots run handlers at once; ``queues`` (None: all) limits what is
    claimed; ``lease`` is the default lease term in seconds; ``grace`` is how long a stop
    waits for running handlers before their jobs are released. An idle worker sleeps until
    another process writes the database (inotify, on Linux) and then starts new jobs within
    a millisecond or two; where that is unavailable it checks every ``poll_interval``
    seconds (a cheap read), and while some slots are busy it looks for work as often.
    """

    def __init__(
        self,
        queue: Queue,
        registry: Registry,
        *,
        concurrency: int = 8,
        queues: Sequence[str] | None = None,
        lease: float = 30.0,
        grace: float = 30.0,
        poll_interval: float = 0.02,
        idle_claim_interval: float = 0.5,
        worker_id: str | None = None,
    ):
        check_int("concurrency", concurrency, minimum=1)
        for name, value in (("lease", lease), ("poll_interval", poll_interval),
                            ("idle_claim_interval", idle_claim_interval)):
            check_seconds(name, value, positive=True)
        check_seconds("grace", grace)
        if isinstance(queues, str):
            queues = [queues]
        if queues is not None and (not queues or not all(isinstance(q, str) and q for q in queues)):
            raise ValueError(f"queues must be None or non-empty queue names, got {queues!r}")
        if not isinstance(registry, Registry):
            raise TypeError(f"registry must be a jobq Registry, got {registry!r:.80}")
        self.queue = queue
        self.registry = registry
        self.concurrency = concurrency
        self.queues = None if queues is None else list(queues)
        self.lease = float(lease)
        self.grace = float(grace)
        self.poll_interval = float(poll_interval)
        self.idle_claim_interval = float(idle_claim_interval)
        self.id = worker_id or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"
        self.counts = {"succeeded": 0, "failed": 0, "dead": 0, "lost": 0, "released": 0,
                       "cancelled": 0}
        self._runs: dict[int, _Run] = {}
        self._running = 0  # runs in state _RUNNING (guarded by _lock)
        self._timed = 0  # ... of which have a deadline
        self._lock = threading.RLock()  # an RLock: Condition.notify checks ownership in C
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._outbox: list[_Run] = []
        self._outbox_ok = 0  # successes in the outbox
        # On the same lock: a finishing handler takes one lock, not two.
        self._outbox_cv = threading.Condition(self._lock)
        self._writing = False  # the completer holds outcomes it has not written yet
        self._write_took = 0.0  # seconds the completer's last write took
        self._closing = False
        self._claim_lock = threading.Lock()  # one claim at a time: slots are never overbooked
        self._backlog = True  # the last claim filled every free slot: more may be ready
        self._pool = DaemonPool(concurrency + max(2, concurrency // 2))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._hb_stop = threading.Event()
        shortest = min([self.lease, *(t.lease for t in _tasks(registry) if t.lease)])
        self._beat_every = shortest / 3
        self._reaper = Reaper(queue, interval=min(self.lease, 60.0))
        self._watch = queue.watch()

    # -- public -----------------------------------------------------------------------------

    def run(self, *, burst: bool = False, handle_signals: bool = True) -> None:
        """Work until ``stop()`` (or SIGTERM/SIGINT when ``handle_signals`` and on the main
        thread); with ``burst``, until no job is ready and none is running. Returns after a
        clean shutdown: running jobs finished or released, the worker deregistered."""
        restore = self._install_signals() if handle_signals else None
        try:
            threads = self._start()
            try:
                self._claim_loop(burst)
                self._drain()
            finally:
                self._shutdown(threads)
        finally:
            if restore:
                restore()

    def stop(self) -> None:
        """Stop claiming and shut down gracefully. Safe from any thread or signal handler."""
        self._stopping.set()
        self._wake.set()
        self._watch.wake()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def running_jobs(self) -> list[tuple[Job, float, JobContext]]:
        """(job, seconds running, context) of every handler running now, oldest first."""
        now = time.monotonic()
        with self._lock:
            runs = [r for r in self._runs.values() if r.state == _RUNNING]
        return [(r.job, now - r.started, r.ctx) for r in sorted(runs, key=lambda r: r.started)]

    # -- starting and stopping --------------------------------------------------------------

    def _start(self) -> list[threading.Thread]:
        self.queue.register_worker(self.id, host=socket.gethostname(), pid=os.getpid(),
                                   queues=self.queues, concurrency=self.concurrency)
        self._reaper.run_once()
        threads = [threading.Thread(target=self._heartbeat_loop, name="jobq-heartbeat", daemon=True),
                   threading.Thread(target=self._completer_loop, name="jobq-completer", daemon=True)]
        for t in threads:
            t.start()
        log.info("worker %s started: concurrency=%d queues=%s lease=%gs kinds=%s", self.id,
                 self.concurrency, ",".join(self.queues) if self.queues else "*", self.lease,
                 ",".join(self.registry.kinds()) or "-")
        return threads

    def _drain(self) -> None:
        """Let running handlers finish within the grace period, then release the rest."""
        deadline = time.monotonic() + self.grace
        while self._busy() and time.monotonic() < deadline:
            self._check_timeouts()
            self._wake.wait(min(0.1, max(0.0, deadline - time.monotonic())))
            self._wake.clear()
        with self._lock:
            left = [r for r in self._runs.values() if r.state == _RUNNING]
        for run in left:
            self._abandon(run, Released())

    def _shutdown(self, threads: list[threading.Thread]) -> None:
        with self._outbox_cv:
            self._closing = True
            self._outbox_cv.notify()
        threads[1].join()  # the completer writes everything queued before it ends
        self._hb_stop.set()
        threads[0].join()
        self._pool.close()
        self._watch.close()
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        try:
            self.queue.deregister_worker(self.id)
        except JobqError as e:
            log.warning("could not deregister worker %s: %s", self.id, e)
        log.info("worker %s stopped: %s", self.id,
                 " ".join(f"{k}={v}" for k, v in self.counts.items()))

    def _install_signals(self):
        if threading.current_thread() is not threading.main_thread():
            return None
        previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

        def on_signal(signum, _frame):
            if self._stopping.is_set():
                n = self._busy()
                log.warning("second signal: exiting now; the leases of %d running job(s) will "
                            "expire and the jobs run again", n)
                logging.shutdown()
                os._exit(130 if signum == signal.SIGINT else 143)
            log.info("%s: stopping; running jobs get %gs to finish (signal again to exit "
                     "at once)", signal.Signals(signum).name, self.grace)
            self.stop()

        for s in previous:
            signal.signal(s, on_signal)
        return lambda: [signal.signal(s, h) for s, h in previous.items()]

    # -- claiming ---------------------------------------------------------------------------

    def _busy(self) -> int:
        return self._running

    def _leave_running(self, run: _Run, state: str) -> None:
        """Move ``run`` out of _RUNNING (the caller holds ``_lock``)."""
        run.state = state
        self._running -= 1
        if run.deadline is not None:
            self._timed -= 1

    def _claim_loop(self, burst: bool) -> None:
        changed = True
        next_claim = 0.0
        while not self._stopping.is_set():
            self._wake.clear()
            self._check_timeouts()
            free = self.concurrency - self._busy()
            # While completions wait to be written, leave the claim to the completer: it
            # claims for the freed slots in the same transaction (one commit, not two).
            if free > 0 and not self._completions_pending():
                changed = self._changed(0.0) or changed
                now = time.monotonic()
                idle = not self._runs
                if self._backlog or changed or now >= next_claim or (burst and idle):
                    changed = False
                    next_claim = now + self.idle_claim_interval
                    got = self._claim()
                    if not got and burst and not self._runs:
                        return
                    if got:
                        continue
                if not self._runs and not burst:
                    # Nothing running: sleep until another process commits, the next look
                    # for delayed jobs is due, or the worker is woken.
                    changed = self._changed(max(0.0, next_claim - time.monotonic()))
                    continue
            self._wake.wait(self._wait_time(free > 0))

    def _changed(self, timeout: float) -> bool:
        """Whether another process may have committed, waiting up to ``timeout``."""
        try:
            return self._watch.wait(timeout)
        except JobqError as e:
            log.warning("watching the database failed: %s", e)
            self._stopping.wait(min(1.0, timeout))
            return True

    def _completions_pending(self) -> bool:
        return self._writing or self._outbox_ok > 0

    def _wait_time(self, polling: bool) -> float:
        wait = self.poll_interval if polling else 0.25
        if not self._timed:
            return wait
        with self._lock:
            deadlines = [r.deadline for r in self._runs.values()
                         if r.state == _RUNNING and r.deadline is not None]
        if deadlines:
            wait = min(wait, max(0.0, min(deadlines) - time.monotonic()))
        return wait

    def _claim(self) -> int:
        with self._claim_lock:
            free = self.concurrency - self._busy()
            if free <= 0:
                return 0
            try:
                jobs = self.queue.claim_many(self.id, free, queues=self.queues,
                                             lease=self.lease)
            except JobqError as e:
                log.warning("claim failed, retrying: %s", e)
                self._stopping.wait(min(1.0, self.lease / 3))
                return 0
            return self._adopt(jobs, free)

    def _adopt(self, jobs: list[Job], asked: int) -> int:
        """Start handlers for jobs a claim of ``asked`` slots returned (the caller holds
        ``_claim_lock``). A claim that filled every slot asked for suggests more are ready."""
        if asked > 0:
            self._backlog = len(jobs) == asked
        runs = [self._new_run(job) for job in jobs]
        with self._lock:
            for run in runs:
                self._runs[run.job.id] = run
                self._running += 1
                if run.deadline is not None:
                    self._timed += 1
        longer = [r for r in runs if r.lease != self.lease]
        if longer:
            self._extend(longer)
        for run in runs:
            self._dispatch(run)
        return len(jobs)

    def _new_run(self, job: Job) -> _Run:
        task = self.registry.get(job.kind)
        lease = task.lease if task and task.lease else self.lease
        ctx = JobContext(self.queue, job.id, job.token, job.attempts, self.id, job.kind, lease)
        now = time.monotonic()
        deadline = now + task.timeout if task and task.timeout else None
        return _Run(job, task, ctx, lease, now, deadline)

    # -- running handlers -------------------------------------------------------------------

    def _dispatch(self, run: _Run) -> None:
        if isinstance(run.job.payload, RawJSON):  # written by something other than jobq
            self._finished(run, Failed("the stored payload is not valid JSON; not retried",
                                       give_up=True))
        elif run.task is None:
            self._finished(run, Failed(f"no handler for kind {run.job.kind!r} (this worker "
                                       f"knows: {', '.join(self.registry.kinds()) or 'none'})"))
        elif run.task.is_async:
            run.future = asyncio.run_coroutine_threadsafe(self._call_async(run), self._event_loop())
        else:
            run.future = self._pool.submit(self._call_sync, run)

    def _call_sync(self, run: _Run) -> None:
        if run.state != _RUNNING:  # abandoned while waiting for a thread
            return
        try:
            args = (run.job.payload, run.ctx) if run.task.wants_context else (run.job.payload,)
            outcome = _success(run.task.fn(*args))
        except BaseException as e:  # noqa: BLE001 - a handler's failure is data, never ours
            outcome = _failure(e)
        self._finished(run, outcome)

    async def _call_async(self, run: _Run) -> None:
        try:
            args = (run.job.payload, run.ctx) if run.task.wants_context else (run.job.payload,)
            outcome = _success(await run.task.fn(*args))
        except BaseException as e:  # noqa: BLE001
            outcome = _failure(e)
        self._finished(run, outcome)

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="jobq-asyncio",
                                 daemon=True).start()
            return self._loop

    def _finished(self, run: _Run, outcome: Outcome) -> None:
        """A handler ended. Ignored when the run was abandoned meanwhile."""
        if isinstance(outcome, Lost):  # its own heartbeat() or progress() learnt it
            self._abandon(run, outcome)
            return
        with self._lock:
            if run.state != _RUNNING:
                if isinstance(outcome, Succeeded):
                    log.info("%s: handler returned after the run was abandoned; result "
                             "discarded", _describe(run))
                return
            self._leave_running(run, _FINISHING)
            run.outcome = outcome
            self._post_locked(run)

    def _abandon(self, run: _Run, outcome: Failed | Released | Lost) -> None:
        """Stop waiting for a running handler: write ``outcome`` (nothing when ``Lost``)
        and free its slot. The handler is told through ``ctx.cancelled``."""
        lost = isinstance(outcome, Lost)
        with self._lock:
            if run.state != _RUNNING:
                return
            self._leave_running(run, _GONE if lost else _FINISHING)
            run.outcome = outcome
            if lost:
                self._runs.pop(run.job.id, None)
        run.ctx.cancelled.set()
        if run.future is not None and run.task is not None and run.task.is_async:
            run.future.cancel()
        if not lost:
            self._post(run)
        else:
            self._count("lost")
            log.warning("%s lease lost after %.3fs (reaped or taken over): the handler was "
                        "told to stop; its result will be discarded", _describe(run),
                        time.monotonic() - run.started)
        self._wake.set()

    def _check_timeouts(self) -> None:
        if not self._timed:
            return
        now = time.monotonic()
        with self._lock:
            late = [r for r in self._runs.values()
                    if r.state == _RUNNING and r.deadline is not None and now >= r.deadline]
        for run in late:
            self._abandon(run, Failed(f"timed out after {run.task.timeout:g}s"))

    # -- writing outcomes -------------------------------------------------------------------

    def _post(self, run: _Run) -> None:
        with self._lock:
            self._post_locked(run)

    def _post_locked(self, run: _Run) -> None:
        """Hand an outcome to the completer, which wakes the claim loop once it is written
        (the slot counts as free from now on, but its job is not finished yet). The caller
        holds ``_lock``."""
        self._outbox.append(run)
        if isinstance(run.outcome, Succeeded):
            self._outbox_ok += 1
        # The completer waits for a first outcome, or (grouping a slow commit) for the last
        # running handler: no other outcome needs to wake it.
        if len(self._outbox) == 1 or not self._running:
            self._outbox_cv.notify()

    def _completer_loop(self) -> None:
        while True:
            with self._outbox_cv:
                while not self._outbox and not self._closing:
                    self._outbox_cv.wait()
                self._group_commit()
                batch, self._outbox = self._outbox, []
                self._outbox_ok = 0
                if not batch and self._closing:
                    return
                self._writing = True
            started = time.monotonic()
            try:
                self._write(batch)
            except Exception:  # noqa: BLE001 - keep writing later outcomes; leases expire
                log.exception("writing the outcomes of %d job(s) failed", len(batch))
            self._write_took = time.monotonic() - started
            with self._lock:
                for run in batch:
                    run.state = _GONE
                    self._runs.pop(run.job.id, None)
                self._writing = False
                full = self._running >= self.concurrency
            if not full:  # the claim loop has slots to fill (or nothing left to wait for)
                self._wake.set()

    def _group_commit(self) -> None:
        """When a write is slow (an fsync per commit under synchronous=FULL), wait up to
        half a write's time for the other running handlers to finish, so that one commit
        carries all their outcomes. Fast writes never wait. Called holding ``_outbox_cv``."""
        if self._write_took < _GROUP_COMMIT_AFTER or self._closing:
            return
        deadline = time.monotonic() + min(self._write_took / 2, _GROUP_COMMIT_MAX)
        while self._busy() and not self._closing:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._outbox_cv.wait(left)

    def _write(self, batch: list[_Run]) -> None:
        done = [r for r in batch if isinstance(r.outcome, Succeeded)]
        if done:
            try:
                accepted = self._complete(done)
            except JobqError as e:
                log.error("completing %d job(s) failed (their leases will expire and they run "
                          "again): %s", len(done), e)
                accepted = [None] * len(done)
            self._count("succeeded", accepted.count(True))
            verbose = log.isEnabledFor(logging.INFO)
            for run, ok in zip(done, accepted):
                if ok:
                    if verbose:
                        log.info("%s succeeded in %.3fs", _describe(run), _took(run))
                elif ok is False:
                    self._count("lost")
                    log.warning("%s lease lost before completion: result discarded (the job "
                                "was reaped or taken over)", _describe(run))
        for run in batch:
            if isinstance(run.outcome, Failed):
                self._write_failure(run, run.outcome)
            elif isinstance(run.outcome, Released):
                self._write_release(run)

    def _complete(self, done: list[_Run]) -> list[bool]:
        """Write completions, claiming jobs for the free slots in the same transaction."""
        items = [(r.job.id, r.job.token, r.outcome.result) for r in done]
        if self._stopping.is_set():
            return self.queue.complete_many(items)
        with self._claim_lock:
            free = self.concurrency - self._busy()
            accepted, jobs = self.queue.complete_and_claim(
                items, self.id, max(0, free), queues=self.queues, lease=self.lease)
            self._adopt(jobs, free)
        return accepted

    def _write_failure(self, run: _Run, failed: Failed) -> None:
        task, attempts, error = run.task, run.job.attempts, failed.error
        try:
            if failed.give_up or (task and task.max_attempts and attempts >= task.max_attempts):
                job = self.queue.give_up(run.job.id, run.job.token, error)
            else:
                retry_in = task.backoff.delay(attempts) if task and task.backoff else None
                job = self.queue.fail(run.job.id, run.job.token, error, retry_in=retry_in)
        except LeaseLost:
            self._count("lost")
            log.warning("%s failed after losing its lease: nothing recorded", _describe(run))
            return
        except JobqError as e:
            log.error("%s failed, and recording it failed too: %s", _describe(run), e)
            return
        summary = clean(first_line(error.rstrip().rsplit("\n", 1)[-1]), limit=200)
        if job.status == JobStatus.PENDING:
            self._count("failed")
            log.warning("%s failed in %.3fs, retry in %.1fs: %s", _describe(run), _took(run),
                        max(0.0, job.run_at - self.queue.clock.now()), summary)
        elif job.status == JobStatus.CANCELLED:
            self._count("cancelled")
            log.info("%s cancelled after %.3fs", _describe(run), _took(run))
        else:
            self._count("dead")
            log.error("%s failed in %.3fs, dead (no attempts left): %s", _describe(run),
                      _took(run), summary)

    def _write_release(self, run: _Run) -> None:
        try:
            self.queue.release(run.job.id, run.job.token)
        except JobqError as e:
            log.warning("%s could not be released (%s); its lease will expire", _describe(run), e)
            return
        self._count("released")
        log.info("%s released unfinished after %.3fs (shutdown): it can run again at once",
                 _describe(run), _took(run))

    def _count(self, what: str, n: int = 1) -> None:
        with self._lock:
            self.counts[what] += n

    # -- heartbeat --------------------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        while not self._hb_stop.wait(self._beat_every):
            with self._lock:
                runs = [r for r in self._runs.values() if r.state != _GONE]
            try:
                self._extend(runs)
                self.queue.beat_worker(self.id, busy=self._busy())
            except JobqError as e:
                log.warning("heartbeat failed (will retry): %s", e)
            self._reaper.run_if_due()

    def _extend(self, runs: list[_Run]) -> None:
        """Extend the leases of ``runs`` (one transaction per lease term in use)."""
        by_lease: dict[float, list[_Run]] = {}
        for run in runs:
            by_lease.setdefault(run.lease, []).append(run)
        for lease, group in by_lease.items():
            result = self.queue.extend_many([(r.job.id, r.job.token) for r in group], lease=lease)
            for run in group:
                if run.job.id in result.cancel_requested:
                    run.ctx.cancelled.set()
                if run.job.id in result.lost:
                    self._abandon(run, Lost())


def _tasks(registry: Registry) -> list[Task]:
    return [t for k in registry.kinds() if (t := registry.get(k)) is not None]


def _success(result: Any) -> Succeeded | Failed:
    if result is None:
        return _SUCCEEDED_NONE
    try:
        encode_json(result, "the handler's result")
    except (TypeError, ValueError) as e:
        return Failed(f"{type(e).__name__}: {e}")
    return Succeeded(result)


# Most handlers return None: one shared record (building a frozen dataclass takes ~0.25 us).
_SUCCEEDED_NONE = Succeeded(None)


def _failure(e: BaseException) -> Failed | Lost:
    if isinstance(e, LeaseLost):
        return Lost()
    if isinstance(e, asyncio.CancelledError):
        return Failed("the handler was cancelled")
    return Failed("".join(traceback.format_exception(e)))


def _describe(run: _Run) -> str:
    job, task = run.job, run.task
    most = min(job.max_attempts, task.max_attempts or job.max_attempts) if task else job.max_attempts
    return f"job={job.id} kind={clean(job.kind, limit=80)} attempt={job.attempts}/{most}"


def _took(run: _Run) -> float:
    return time.monotonic() - run.started

