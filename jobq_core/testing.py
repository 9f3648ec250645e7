"""Helpers for tests of code that uses jobq: a clock you move by hand, a drain that runs
jobs in the test's own thread, and assertions on what was enqueued.

    q = Queue(":memory:", clock=FakeClock())   # or a file in tmp_path
    signup(q, "ada@example.com")                # the code under test enqueues
    assert_enqueued(q, "email.send", payload={"to": "ada@example.com"})
    ran = drain(q, registry, clock=q.clock)     # run it, retries and delays included
    assert [r.outcome for r in ran] == [Outcome.SUCCEEDED]

``drain`` is not a worker: no threads, no leases running out, no heartbeats, no timeouts
(a task's ``timeout`` is not enforced), no process pool, no periodic schedules. It claims,
runs and records through the same ``Queue`` calls a worker makes, so what it leaves in
the database (statuses, attempts, errors, results) is what a worker would.
"""
from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import LeaseLost
from .presentation import why_policy
from .queue import Queue
from .registry import JobContext, Registry
from .tasks import Task
from .types import Job, JobStatus, Outcome, RawJSON
from .worker.runs import (Failed, Lost, Released, Snoozed, Succeeded, ahooked, call_handler,
                          hooked, raised, record_failure, returned)

T = TypeVar("T")

DRAIN_WORKER = "jobq-testing-drain"
_LEASE = 3600.0  # nothing reaps a drained run: the lease only has to outlast the handler


class FakeClock:
    """A clock that stands still until told to move. Thread-safe."""

    def __init__(self, start: float = 1_700_000_000.0):
        self._now = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> float:
        with self._lock:
            self._now += seconds
            return self._now

    def set(self, t: float) -> None:
        with self._lock:
            self._now = float(t)


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """One run made by ``drain``: the job, its attempt (1 on the first run), how it ended
    (``Outcome.SUCCEEDED``, ``FAILED``, ``SNOOZED`` or ``LEASE_LOST``), the handler's return value
    (decoded JSON, as stored) or the error (a traceback, or why it did not run), and the
    job's status after it: ``pending`` when a failure will be retried, ``dead`` when not."""

    job_id: int
    kind: str
    outcome: Outcome
    result: Any
    error: str | None
    attempt: int
    status: JobStatus


def drain(q: Queue, registry: Registry, *, clock: FakeClock | None = None,
          max_jobs: int = 10_000) -> list[RunOutcome]:
    """Run every ready job of ``q`` with ``registry``'s handlers in this thread, one at a
    time in claim order (priority, then run_at, then id), until none is ready; the runs'
    outcomes in order. Jobs the handlers enqueue run too.

    With ``clock`` (a ``FakeClock``, which must be the queue's clock), when no job is
    ready it is moved to the next delayed job or retry, or to the end of a full rate
    window, which then runs: a drain ends only when no pending job is left (but for those a
    paused queue or a concurrency limit holds). Without it, waiting jobs stay pending. Raises
    ``RuntimeError`` after ``max_jobs`` runs (a job that enqueues itself forever).
    An ``async def`` handler runs on an event loop of its own: call ``drain`` from
    synchronous code, not from inside a running event loop."""
    if clock is not None and q.clock is not clock:
        raise ValueError("drain(clock=...) must be the queue's own clock "
                         "(Queue(..., clock=clock)): moving another clock delays nothing")
    limits = {kind: task.max_attempts for kind in registry.kinds()
              if (task := registry.get(kind)) is not None and task.max_attempts}
    ran: list[RunOutcome] = []
    while True:
        jobs = q.claim_many(DRAIN_WORKER, 1, lease=_LEASE, attempt_limits=limits)
        if not jobs:
            if clock is None or (due := _next_chance(q, clock.now())) is None:
                return ran
            clock.set(max(clock.now(), due))
            continue
        if len(ran) >= max_jobs:
            q.release(jobs[0].id, _token(jobs[0]))
            raise RuntimeError(f"drain ran {max_jobs} jobs and more are ready: a job that "
                               "keeps enqueueing more? (raise max_jobs if not)")
        ran.append(_run(q, registry, jobs[0]))


def _next_chance(q: Queue, now: float) -> float | None:
    """When a pending job may next be claimed, as far as time decides it: the next delayed
    job or retry, or the end of a full rate window of a queue with pending jobs (a drain
    moves the clock there, as the time passing would). None when only a pause or a limit
    no drained job will lift holds them."""
    times = [t for t in [q.next_run_at()] if t is not None]
    for stats in q.stats(window=1.0).queues.values():
        if stats.pending and not stats.paused:
            end = why_policy.rate_window_end(stats, now)
            if end is not None:
                times.append(end)
    return min(times, default=None)


def _token(job: Job) -> int:
    assert job.token is not None, "a claimed job carries its claim's token"
    return job.token


def _run(q: Queue, registry: Registry, job: Job) -> RunOutcome:
    task = registry.get(job.kind)
    token = _token(job)
    ctx = JobContext(q, job.id, token, job.attempts, DRAIN_WORKER, job.kind, _LEASE)
    outcome: Succeeded | Failed | Released | Snoozed | Lost
    if isinstance(job.payload, RawJSON):
        outcome = Failed("the stored payload is not valid JSON; not retried", give_up=True)
    elif task is None:
        outcome = Failed(f"no handler for kind {job.kind!r} (the registry knows: "
                         f"{', '.join(registry.kinds()) or 'none'})")
    elif task.hooks is not None:  # the registry's hooks around the handler, as in a worker
        if task.is_async:
            outcome = _await(ahooked(task.hooks, task, job, ctx, q.max_payload_bytes,
                                     reraise=(KeyboardInterrupt, SystemExit)))
        else:
            outcome = hooked(task.hooks, task, job, ctx, q.max_payload_bytes,
                             reraise=(KeyboardInterrupt, SystemExit))
    else:
        try:
            value = call_handler(task, job.payload, ctx, job.queue, job.trace_context)
            if task.is_async:
                value = _await(value)
            outcome = returned(value, q.max_payload_bytes)
        except BaseException as e:  # noqa: BLE001 - a handler's failure is data
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            outcome = raised(e, task)
    return _record(q, job, token, task, ctx, outcome)


def _await(coroutine: Any) -> Any:
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def _record(q: Queue, job: Job, token: int, task: Task | None, ctx: JobContext,
            outcome: Succeeded | Failed | Released | Snoozed | Lost) -> RunOutcome:
    """Write ``outcome`` as the worker's completer would, and say what it became."""
    def made(kind: Outcome, result: Any = None, error: str | None = None) -> RunOutcome:
        found = q.get(job.id)
        status = found.status if found is not None else JobStatus.SUCCEEDED
        if kind is Outcome.SUCCEEDED and found is not None:
            result = found.result
        return RunOutcome(job.id, job.kind, kind, result, error, job.attempts, status)

    if ctx.completed_on_conn:
        found = q.get(job.id)
        if found is not None and found.token == token and found.status == JobStatus.SUCCEEDED:
            return made(Outcome.SUCCEEDED)
    if isinstance(outcome, (Lost, Released)):  # (a handler never ends Released)
        return made(Outcome.LEASE_LOST)
    if isinstance(outcome, Failed):
        try:  # as the worker's completer does: the claim lowered max_attempts to the task's
            record_failure(q, job, token, task, outcome)
        except LeaseLost:
            return made(Outcome.LEASE_LOST, error=outcome.error)
        return made(Outcome.FAILED, error=outcome.error)
    if isinstance(outcome, Snoozed):  # runs again once its time comes, as in a worker
        try:
            q.snooze(job.id, token, outcome.seconds)
        except LeaseLost:
            return made(Outcome.LEASE_LOST)
        return made(Outcome.SNOOZED)
    try:
        q.complete(job.id, token, outcome.result)
    except LeaseLost:
        return made(Outcome.LEASE_LOST)
    return made(Outcome.SUCCEEDED)


def enqueued(q: Queue, kind: str | None = None) -> list[Job]:
    """The pending jobs of ``q`` (of ``kind``, when given), oldest first: what was
    enqueued and has not run yet (retries waiting out their backoff included)."""
    jobs: list[Job] = []
    while True:
        page = q.list(JobStatus.PENDING, kind=kind, limit=1000, offset=len(jobs))
        jobs += page
        if len(page) < 1000:
            return sorted(jobs, key=lambda j: j.id)


def assert_enqueued(q: Queue, kind: str, *, payload: Any = None, queue: str | None = None,
                    count: int | None = None) -> list[Job]:
    """Assert that pending jobs of ``kind`` are in ``q``: with ``payload`` equal to it
    (None: any payload), in ``queue`` (None: any), and exactly ``count`` of them (None:
    at least one). Returns the matching jobs; the ``AssertionError`` lists what is there."""
    jobs = enqueued(q, kind)
    matching = [j for j in jobs if (payload is None or j.payload == payload)
                and (queue is None or j.queue == queue)]
    if (len(matching) == count) if count is not None else matching:
        return matching
    wanted = " ".join(w for w in (
        f"{count if count is not None else 'at least one'} pending job(s) of kind {kind!r}",
        f"with payload {payload!r}" if payload is not None else "",
        f"in queue {queue!r}" if queue is not None else "") if w)
    found = "; ".join(f"#{j.id} queue={j.queue!r} payload={j.payload!r}" for j in jobs[:10])
    raise AssertionError(f"expected {wanted}, found {len(matching)}"
                         + (f" (pending {kind!r} jobs: {found}"
                            f"{' ...' if len(jobs) > 10 else ''})" if jobs else
                            f" (no pending {kind!r} jobs)"))


def wait_for(condition: Callable[[], T], timeout: float = 10.0, interval: float = 0.01) -> T:
    """Call ``condition`` until it returns something truthy and return that; raise
    ``AssertionError`` after ``timeout`` seconds. For tests that wait on a worker: poll the
    database with a deadline instead of sleeping a fixed time."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)
