"""Registry: which handler runs which kind of job, and the context a handler receives.

A handler is called with the job's payload; one that declares a second parameter also gets
a ``JobContext``. Its return value (JSON) is stored as the job's result.

Delivery is at-least-once: after a crash or an expired lease a handler may run again for
the same job, possibly while a stalled earlier run is still going. Handlers must be
idempotent; ``ctx.cancelled`` tells a run that its result will be thrown away. Writes to
the queue's own database can be exactly once: ``ctx.complete(conn=...)`` completes the job
inside the application's transaction, fenced, so they commit with the completion or not
at all.
"""
from __future__ import annotations

import enum
import inspect
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from .api.app_connections import on_async, unwrap
from .backoff import Backoff
from .common.checks import MAX_LEASE, check_int, check_limits, check_name, check_seconds
from .errors import LeaseLost, Snooze
from .api.new_jobs import encode_json
from .api.payloads import payload_type
from .schedule import Schedule, make_schedule
from .store import connection_ops
from .store.base import Completion, ConnectionIdentity
from .tasks import Handler, Task, open_default
from .types import QueueLimits, Rate

if TYPE_CHECKING:
    from .queue import Queue

Hook = TypeVar("Hook", bound=Callable[..., Any])


class RunStatus(enum.StrEnum):
    """How a run ended, as ``after_run`` hooks are told (``RunEnd.status``)."""

    SUCCEEDED = "succeeded"  # the handler returned (its result is JSON, within the limit)
    RETRIED = "retried"  # it failed, and the job runs again (attempts left, retried)
    DEAD = "dead"  # it failed, and the job ends dead (attempts used up, not retried, GiveUp)
    SNOOZED = "snoozed"  # it raised Snooze: runs again, the attempt not counted
    CANCELLED = "cancelled"  # it stopped after its run was told to (ctx.cancelled) or lost


@dataclass(frozen=True, slots=True)
class RunEnd:
    """What an ``after_run`` hook is told of a run: its ``status``, the handler's
    ``result`` (succeeded), the ``error`` to be stored (retried, dead, cancelled), and for
    a retry the seconds until the next attempt (None: the queue's backoff decides). Decided
    where the handler ran, by the rules the store applies when the outcome is written
    (``jobq_core.store.attempts``); ``failed``: retried or dead."""

    status: RunStatus
    result: Any = None
    error: str | None = None
    retry_in: float | None = None

    @property
    def failed(self) -> bool:
        return self.status in (RunStatus.RETRIED, RunStatus.DEAD)


@dataclass(slots=True)
class Hooks:
    """A registry's hooks around runs, in the order they were registered."""

    before_run: list[Callable[..., Any]] = field(default_factory=list)
    after_run: list[Callable[..., Any]] = field(default_factory=list)
    on_dead: list[Callable[..., Any]] = field(default_factory=list)


class Registry:
    """Maps job kinds to handlers. Register with ``@registry.task("kind", ...)``.

    ``queue``: the ``Queue`` (or a database path or URL, opened on the spot) that tasks
    enqueue to when no queue is given: ``send_email.enqueue(payload)`` (``default_queue``)."""

    def __init__(self, queue: Queue | str | os.PathLike[str] | None = None) -> None:
        self._tasks: dict[str, Task] = {}
        self._schedules: dict[str, Schedule] = {}
        self._limits: dict[str, QueueLimits] = {}
        # None until a hook is registered: a run then costs one test (``Task.hooks``)
        self.hooks: Hooks | None = None
        self.default_queue: Queue | None = open_default(queue)
        if self.default_queue is not None and self.default_queue.registry is None:
            # jobs enqueued there by kind take these tasks' defaults
            self.default_queue.registry = self

    def periodic(self, kind: str, *, every: float | None = None, cron: str | None = None,
                 payload: Any = None, queue: str = "default", priority: int = 0,
                 max_attempts: int | None = None, tz: str | None = None) -> Schedule:
        """Enqueue a ``kind`` job with ``payload`` every ``every`` seconds (>= 1; ticks at
        multiples of ``every`` since the epoch), or at the times the 5-field ``cron``
        expression matches (in UTC, or in the time zone ``tz``). Every running worker
        whose registry has the schedule takes part, and each tick enqueues exactly one job
        (run_at: the tick's time), however many workers run. A new schedule starts with
        the first tick after a worker first sees it; ticks missed while no worker ran
        are not made up, except the most recent one, enqueued once (with a log line)."""
        schedule = make_schedule(kind, every=every, cron=cron,
                                 payload=encode_json(payload, "payload"), queue=queue,
                                 priority=priority, max_attempts=max_attempts, tz=tz)
        if schedule.key in self._schedules:
            raise ValueError(f"the schedule {schedule.key!r} is declared twice")
        self._schedules[schedule.key] = schedule
        return schedule

    def queue(self, name: str, *, concurrency: int | None = None, rate: str | Rate | None = None,
              key_concurrency: int | None = None, ordered: bool = False) -> QueueLimits:
        """Declare queue ``name``'s limits in code (``Queue.set_limit``'s, checked now):
        each worker that starts applies them when the code declares other limits than
        the database recorded (the first start, or a deploy that changed them). A start
        with the same declaration leaves them as they are, so an operator's ``jobq limit``
        holds until the code changes; ``jobq queues`` shows the two when they differ."""
        limits = check_limits(name, concurrency, rate, key_concurrency, ordered)
        if name in self._limits:
            raise ValueError(f"the limits of queue {name!r} are declared twice")
        self._limits[name] = limits
        return limits

    def queues(self) -> dict[str, QueueLimits]:
        """The queues' limits declared with ``queue``, by name."""
        return dict(self._limits)

    def before_run(self, hook: Hook) -> Hook:
        """Call ``hook(job, ctx)`` before each run's handler, where it runs (a handler
        thread, the event loop, a process-pool child), with the claimed ``Job`` and the
        run's ``JobContext``. ``hook`` may be ``async def``: awaited on the loop of an
        ``async def`` handler, run on a loop of its own otherwise. A hook that raises is
        logged (``jobq.worker``) and the run goes on: a hook never changes an outcome."""
        return self._add_hook("before_run", hook)

    def after_run(self, hook: Hook) -> Hook:
        """Call ``hook(job, ctx, outcome)`` after each run's handler, where it ran, before
        the outcome is written; ``outcome`` is a ``RunEnd`` (succeeded, retried, dead,
        snoozed or cancelled). Sync or async, and raising, as ``before_run``. The outcome
        is what this run decided; the store's write may still find the job cancelled or
        its lease lost."""
        return self._add_hook("after_run", hook)

    def on_dead(self, hook: Hook) -> Hook:
        """Call ``hook(job, ctx, error)`` after a run whose job ends dead (attempts used
        up, not retried, ``GiveUp``), where it ran, before ``after_run``'s hooks; ``error``
        is the error stored. Sync or async, and raising, as ``before_run``."""
        return self._add_hook("on_dead", hook)

    def _add_hook(self, when: str, hook: Hook) -> Hook:
        if not callable(hook):
            raise TypeError(f"a {when} hook must be callable, got {hook!r:.80}")
        if self.hooks is None:
            self.hooks = Hooks()
            for task in self._tasks.values():
                task.hooks = self.hooks
        getattr(self.hooks, when).append(hook)
        return hook

    def schedules(self) -> list[Schedule]:
        return list(self._schedules.values())

    def task(
        self,
        kind: str,
        *,
        queue: str | None = None,
        priority: int = 0,
        max_attempts: int | None = None,
        lease: float | None = None,
        timeout: float | None = None,
        backoff: Backoff | None = None,
        retry_on: type[BaseException] | tuple[type[BaseException], ...] | None = None,
        no_retry_on: type[BaseException] | tuple[type[BaseException], ...] | None = None,
    ) -> Callable[[Handler], Task]:
        """Register the decorated function as the handler of ``kind``; returns a ``Task``,
        still callable as the function, with ``enqueue`` and ``enqueue_many``.

        ``queue`` and ``priority`` are the defaults of jobs enqueued through the task.
        ``max_attempts`` is their limit too, and caps the attempts of every job of this
        kind (the lower of it and the job's own limit wins); ``lease`` overrides the
        worker's lease for these jobs; ``timeout`` (seconds) fails a run that takes
        longer; ``backoff`` sets the retry delays after a failure.

        ``retry_on`` (an exception class or a tuple of them): only the handler's
        exceptions that are instances of these are retried; any other ends the job dead
        at once, its error saying so (``ValueError: ... (not retried: ValueError is not in
        retry_on)``). ``no_retry_on``: the reverse, these end it dead and the others are
        retried. Give one of the two at most. Neither applies to ``Retry`` and ``GiveUp``
        (always retried, always dead), nor to timeouts and crashes (retried).

        A handler whose payload parameter is annotated with a dataclass, a ``TypedDict``
        or a pydantic model gets a typed payload: checked when enqueued through the task,
        rebuilt before each call (see ``jobq_core.api.payloads``).
        """
        check_name("kind", kind)
        if queue is not None:
            check_name("queue", queue)
        check_int("priority", priority)
        if max_attempts is not None:
            check_int("max_attempts", max_attempts, minimum=1)
        if lease is not None:
            check_seconds("lease", lease, positive=True, maximum=MAX_LEASE)
        if timeout is not None:
            check_seconds("timeout", timeout, positive=True)
        if backoff is not None and not isinstance(backoff, Backoff):
            raise TypeError(f"backoff must be a jobq Backoff, got {backoff!r:.80}")
        if retry_on is not None and no_retry_on is not None:
            raise ValueError(f"task {kind!r}: give retry_on (the exceptions that retry) or "
                             "no_retry_on (those that do not), not both")
        retried = _exception_types("retry_on", retry_on)
        not_retried = _exception_types("no_retry_on", no_retry_on)

        def register(fn: Handler) -> Task:
            if not callable(fn):
                raise TypeError(f"a handler must be callable, got {fn!r:.80}")
            if kind in self._tasks:
                raise ValueError(f"kind {kind!r} already has a handler: {self._tasks[kind].fn!r}")
            task = Task(kind, fn, max_attempts, lease, timeout, backoff,
                        inspect.iscoroutinefunction(fn), _wants_context(fn), queue=queue,
                        priority=priority, payload=payload_type(fn), registry=self,
                        retry_on=retried, no_retry_on=not_retried)
            task.hooks = self.hooks
            self._tasks[kind] = task
            return task

        return register

    def get(self, kind: str) -> Task | None:
        return self._tasks.get(kind)

    def kinds(self) -> list[str]:
        return sorted(self._tasks)

    def describe_kinds(self) -> str:
        """The kinds this registry handles, for a worker's start line."""
        return ",".join(self.kinds()) or "-"

    def __contains__(self, kind: object) -> bool:
        return kind in self._tasks

    def __len__(self) -> int:
        return len(self._tasks)

    def __repr__(self) -> str:
        return f"Registry({', '.join(self.kinds())})"



class JobContext:
    """What a running handler may know and do about its job.

    ``heartbeat()`` and ``progress()`` raise ``LeaseLost`` once the job is no longer this
    run's (reaped, re-claimed, cancelled and finished): the handler should stop, as its
    result will be discarded. ``cancelled`` is set when that happens, when an operator asks
    to cancel the job, when the run times out, and when the worker shuts down past its grace
    period.
    """

    __slots__ = ("job_id", "attempt", "worker_id", "kind", "_queue", "_token", "_lease",
                 "_cancelled", "completed_on_conn")
    _create_lock = threading.Lock()

    def __init__(self, queue: Queue | None, job_id: int, token: int, attempt: int,
                 worker_id: str, kind: str, lease: float):
        self.job_id = job_id
        self.attempt = attempt
        self.worker_id = worker_id
        self.kind = kind
        self._queue = queue
        self._token = token
        self._lease = lease
        self._cancelled: threading.Event | None = None
        # Set before a completion on the application's connection is written: whether it
        # committed is known only from the database, which the worker reads once the
        # handler has returned (and it stops extending the lease meanwhile).
        self.completed_on_conn = False

    @property
    def cancelled(self) -> threading.Event:
        """Set when this run should stop (see the class description)."""
        event = self._cancelled
        if event is None:  # made on first use: most runs never look at it
            with self._create_lock:
                if self._cancelled is None:
                    self._cancelled = threading.Event()
                event = self._cancelled
        return event

    def heartbeat(self) -> None:
        """Extend this job's lease now (the worker also does so on its own schedule)."""
        result = self._worker_queue().extend_many([(self.job_id, self._token)],
                                                  lease=self._lease)
        if result.cancel_requested:
            self.cancelled.set()
        if result.lost:
            self.cancelled.set()
            raise LeaseLost(self.job_id, self._token)

    def progress(self, fraction: float | None, message: str | None = None) -> None:
        """Store how far the job got (0..1) and an optional message for the monitor."""
        try:
            self._worker_queue().progress(self.job_id, self._token, fraction, message)
        except LeaseLost:
            self.cancelled.set()
            raise

    def snooze(self, seconds: float) -> NoReturn:
        """Stop here and run this job again in ``seconds``, without counting this attempt
        against ``max_attempts`` (raises ``Snooze``; does not return)."""
        raise Snooze(seconds)

    def dependency_results(self) -> dict[int, Any]:
        """The results of the jobs this one waited on (``enqueue(after=...)``, a chain's
        previous job, a group's members), by id; None for one that did not succeed (with
        ``allow_failed``)."""
        return self._worker_queue().dependency_results(self.job_id)

    def complete(self, result: Any = None, *, conn: Any) -> None:
        """Mark this job succeeded with ``result`` inside the application's transaction on
        ``conn`` (its own ``sqlite3``/``psycopg`` connection to the queue's database, or a
        SQLAlchemy ``Connection`` or ``Session`` over one): the fenced completion is
        written there, so the job is succeeded in the same commit as the application's
        writes, and never without them. Raises ``LeaseLost`` when
        another run owns the job: roll back (a ``with`` block does, as the exception
        leaves it). After the handler returns, the worker writes nothing of its own for
        this run if the job was completed this way; if the transaction was rolled back
        instead, it records the handler's outcome as usual. Commit or roll back before
        returning. ``UnusableConnection``: see ``Queue.enqueue``."""
        if conn is None:
            raise TypeError("ctx.complete() needs conn=: the application's connection whose "
                            "transaction the completion joins")
        text = None if result is None else encode_json(result, "result")
        conn = unwrap(conn)
        ops = connection_ops(conn)
        now = self.prepare_complete(ops.identity(conn))
        if not ops.complete(conn, Completion(self.job_id, self._token, text), now):
            self.cancelled.set()
            raise LeaseLost(self.job_id, self._token)

    async def acomplete(self, result: Any = None, *, conn: Any) -> None:
        """``complete`` in an ``async def`` handler: ``conn`` is the application's asyncio
        connection (a SQLAlchemy ``AsyncSession`` or ``AsyncConnection``, a psycopg
        ``AsyncConnection``, an aiosqlite connection), whose transaction the fenced
        completion joins, written without blocking the event loop. ``LeaseLost`` (nothing
        written) and the rest as for ``complete``."""
        if conn is None:
            raise TypeError("ctx.acomplete() needs conn=: the application's connection whose "
                            "transaction the completion joins")
        await on_async(conn, lambda sync: self.complete(result, conn=sync))

    def prepare_complete(self, identity: ConnectionIdentity) -> float:
        """The worker's side of ``complete``: check that the application's connection
        (``identity``, read where it lives) reaches the queue's database, mark the run as
        completed on it, and return the time to write. A process pool's child asks its
        worker for this; the write itself happens on the child's connection."""
        self._worker_queue().check_connection(identity)
        self.completed_on_conn = True
        return self._worker_queue().clock.now()

    def _worker_queue(self) -> Queue:
        """The worker's queue. A child process's context has none (None): it overrides
        every method that calls this, to ask its worker instead."""
        assert self._queue is not None, "a child process's context has no queue"
        return self._queue

    def __repr__(self) -> str:
        return f"JobContext(job_id={self.job_id}, attempt={self.attempt}, worker={self.worker_id!r})"


def _exception_types(name: str, value: object) -> tuple[type[BaseException], ...] | None:
    """``retry_on``/``no_retry_on`` as a tuple of exception classes (one class alone is
    taken as a tuple of it); None stays None."""
    if value is None:
        return None
    items = value if isinstance(value, tuple) else (value,)
    for item in items:
        if not (isinstance(item, type) and issubclass(item, BaseException)):
            raise TypeError(f"{name} takes exception classes, got {item!r:.80}")
    return items


def _wants_context(fn: Handler) -> bool:
    """True when ``fn`` accepts a second positional argument (or ``*args``)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)
