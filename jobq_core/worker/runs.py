"""A run: one claimed job in this worker, from its claim until its outcome is written; its
states and the outcomes it can end with.

A run is RUNNING while its handler's outcome is awaited. It leaves RUNNING exactly once,
under the worker's lock (``State.leave_running``), whichever comes first: its handler
returns or raises, it times out, its lease is found lost, or the shutdown releases it. The
others then find it no longer RUNNING and do nothing: that is how a late return from an
abandoned handler is discarded.
"""
from __future__ import annotations

import enum
import inspect
import logging
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..errors import GiveUp, LeaseLost, Retry, Snooze
from ..api.new_jobs import DEFAULT_MAX_PAYLOAD, encode_json
from ..registry import Hooks, JobContext, RunEnd, RunStatus
from ..store.attempts import retry_in, used_up
from ..store.base import RetryDelay
from ..tasks import Task
from ..common.error_groups import error_line
from ..common.textsafe import clean, storable
from ..types import Job, JobStatus
from .channel import Message

if TYPE_CHECKING:
    from ..queue import Queue

log = logging.getLogger("jobq.worker")


class RunState(enum.Enum):
    RUNNING = "running"  # its handler's outcome is awaited; it holds a slot
    FINISHING = "finishing"  # it has an outcome that the completer has not written yet
    GONE = "gone"  # its outcome is written, or it was abandoned with nothing to write



@dataclass(frozen=True, slots=True)
class Succeeded:
    """The handler returned ``result`` (checked to be JSON)."""
    result: Any


@dataclass(frozen=True, slots=True)
class Failed:
    """The run failed with ``error`` (a traceback or a reason); ``give_up``: the job goes
    dead whatever attempts it has left; ``timed_out``: it ran past its task's timeout;
    ``retry_delay``: the seconds the handler asked to wait before the next attempt
    (``Retry(delay=...)``), which win over the task's backoff (None: the backoff's)."""
    error: str
    give_up: bool = False
    timed_out: bool = False
    retry_delay: float | None = None


@dataclass(frozen=True, slots=True)
class Released:
    """Stopped unfinished at shutdown: the job goes back to pending at once, the attempt
    not counted."""


@dataclass(frozen=True, slots=True)
class Snoozed:
    """The handler asked to run again in ``seconds`` (``Snooze``): back to pending then, the
    attempt not counted."""
    seconds: float


@dataclass(frozen=True, slots=True)
class Lost:
    """The run's lease is lost (reaped or taken over, or ``terminated``: the job cancelled
    by an operator's terminate): there is nothing to write, and the store's fencing would
    reject it anyway."""
    terminated: bool = False


Outcome = Succeeded | Failed | Released | Snoozed | Lost


@dataclass(eq=False, slots=True)
class Run:
    job: Job
    token: int  # the claim's: job.token, which a claimed job always has
    task: Task | None  # None: this worker has no handler for the job's kind
    ctx: JobContext
    lease: float  # this run's lease term: the task's own, or the worker's
    started: float  # monotonic
    deadline: float | None  # monotonic; None: no timeout
    state: RunState = RunState.RUNNING
    handle: Any = None  # the pool's hold on its handler: an async future, or a child process
    outcome: Outcome | None = None  # set when the run leaves RUNNING
    write_until: float | None = None  # monotonic: retry writing the outcome until then
    write_failures: int = 0  # times its completion alone failed: tried after the others
    ran_for: float | None = None  # seconds its handler ran: set when it leaves RUNNING

    def describe(self) -> str:
        """The run as log lines name it: ``job=42 kind=email.send attempt=1/5``."""
        job, task = self.job, self.task
        most = job.max_attempts
        if task and task.max_attempts:
            most = min(most, task.max_attempts)
        return f"job={job.id} kind={clean(job.kind, limit=80)} attempt={job.attempts}/{most}"

    def took(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self.started


# -- what a handler's end becomes (both pools) -----------------------------------------------

RESULT = "the handler's result"


def result_json(result: Any, limit: int = DEFAULT_MAX_PAYLOAD) -> str | Failed:
    """A handler's return value as JSON text, or the ``Failed`` outcome saying why it is not
    JSON (the run fails: a result is stored as JSON) or is over ``limit`` bytes as JSON
    (the job goes dead, not retried: a handler that returned it once will again, and its
    work is done)."""
    try:
        text = encode_json(result, RESULT)
    except (TypeError, ValueError) as e:
        return Failed(f"{type(e).__name__}: {e}")
    if len(text) * 4 > limit:  # a character is at most 4 UTF-8 bytes
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > limit:
            return Failed(f"ResultTooLarge: the handler's result is {size} bytes as JSON; "
                          f"the limit is {limit} bytes (Worker(max_result_bytes=...), "
                          "jobq run --max-result-size); not stored, not retried",
                          give_up=True)
    return text


def returned(result: Any, limit: int = DEFAULT_MAX_PAYLOAD) -> Succeeded | Failed:
    if result is None:
        return SUCCEEDED_NONE
    checked = result_json(result, limit)
    return checked if isinstance(checked, Failed) else Succeeded(result)


# Most handlers return None: one shared record (building a frozen dataclass takes ~0.25 us).
SUCCEEDED_NONE = Succeeded(None)


def handler_args(task: Task, payload: Any, ctx: JobContext) -> tuple[Any, ...]:
    """The arguments of ``task``'s handler: the payload (rebuilt as the handler's payload
    type, if it declares one: a stored payload that does not fit fails the run) and,
    if it takes one, the context."""
    if task.load is not None:
        payload = task.load(payload)
    return (payload, ctx) if task.wants_context else (payload,)


# Wraps every handler call while set (``jobq_core.contrib.otel`` sets it): called as
# ``around_handler(call, task, ctx, queue, trace_context)``, it returns what ``call()``
# returns. None: no wrapper, and a run costs one test of it.
around_handler: Callable[[Callable[[], Any], Task, JobContext, str, str | None], Any] | None = None


def call_handler(task: Task, payload: Any, ctx: JobContext, queue: str,
                 trace_context: str | None) -> Any:
    """Call ``task``'s handler for one run of a job of ``queue``: what it returns, or for
    an ``async def`` handler its coroutine, which the caller awaits. Every pool (and
    ``testing.drain``) calls handlers through this. ``trace_context``: the job's
    ``Job.trace_context``, as stored; only ``around_handler`` reads it."""
    if around_handler is not None:
        return around_handler(lambda: task.fn(*handler_args(task, payload, ctx)), task, ctx,
                              queue, trace_context)
    # handler_args inlined: a no-op handler's call costs 163 ns this way, 227 ns through
    # handler_args, 97 ns called directly as before (timeit, best of 30 x 300,000)
    if task.load is not None:
        payload = task.load(payload)
    return task.fn(payload, ctx) if task.wants_context else task.fn(payload)


def _is_cancelled(e: BaseException) -> bool:
    # asyncio is imported where a coroutine runs, not here: a process pool's fork server
    # imports this module, and asyncio was a third of its start (bench/import_instructions.py)
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(e, asyncio.CancelledError)


def raised(e: BaseException, task: Task | None = None) -> Failed | Snoozed | Lost:
    """What a handler's exception makes of its run: ``LeaseLost`` (from ``ctx.heartbeat()``
    or ``ctx.progress()``) a lost lease, ``Snooze`` a snooze, ``Retry`` a failure retried
    after the delay it asks for, ``GiveUp`` a failure that ends the job dead, and anything
    else a failure with its traceback: dead at once when ``task``'s ``retry_on`` or
    ``no_retry_on`` says it is not retried.

    The error's first line says why (dead jobs are grouped by it, ``jobq why`` and the
    monitor show it): ``Retry: again in 30s``, ``GiveUp: reason``, ``ValueError: bad
    (not retried: ValueError is not in retry_on)``; the traceback follows."""
    if isinstance(e, LeaseLost):
        return Lost()
    if isinstance(e, Snooze):
        return Snoozed(e.seconds)
    if _is_cancelled(e):
        return Failed("the handler was cancelled")
    trace = "".join(traceback.format_exception(e))
    if isinstance(e, Retry):
        return Failed(f"Retry: {e}\n{trace}", retry_delay=e.delay)
    if isinstance(e, GiveUp):
        return Failed(f"GiveUp: {e.reason or 'the handler gave up'}\n{trace}", give_up=True)
    if task is not None and (task.retry_on is not None or task.no_retry_on is not None):
        why = task.not_retried(e)
        if why is not None:
            return Failed(f"{error_line(trace)} (not retried: {why})\n{trace}", give_up=True)
    return Failed(trace)


def next_delay(task: Task | None, failed: Failed) -> RetryDelay | None:
    """The delay a failed run's next attempt waits, as ``store.attempts.retry_in`` takes
    it: the handler's ``Retry(delay=...)``, else the task's backoff (None: the queue's)."""
    asked = failed.retry_delay
    if asked is not None:
        return lambda _attempts: asked
    return task.backoff.delay if task is not None and task.backoff is not None else None


def record_failure(queue: Queue, job: Job, token: int, task: Task | None,
                   failed: Failed) -> Job:
    """Write a failed run of ``job`` (claimed with ``token``): dead at once when it gives
    up, else retried or dead as its attempts decide (``store.attempts``, once). The job
    after it; raises ``LeaseLost`` when the job is no longer this run's. The worker's
    completer and ``testing.drain`` both record failures through this."""
    if failed.give_up:
        return queue.give_up(job.id, token, failed.error)
    return queue.fail(job.id, token, failed.error,
                      retry_in=retry_in(job.attempts, job.max_attempts, next_delay(task, failed)))


# -- a run across a process pool's sockets (child.py sends, processes.py reads) ---------------

def outcome_message(job_id: int, outcome: Outcome) -> Message:
    """How a child tells the worker that its run of ``job_id`` ended (``outcome_from``
    reads it back). The child's common case, a JSON result, is sent without this."""
    if isinstance(outcome, Succeeded):
        return {"op": "done", "id": job_id, "result": outcome.result}
    if isinstance(outcome, (Lost, Released)):  # (a child's run never ends Released)
        return {"op": "done", "id": job_id, "lost": True}
    if isinstance(outcome, Snoozed):
        return {"op": "done", "id": job_id, "snooze": outcome.seconds}
    # escaped here: a lone surrogate fails the JSON line, and the child with it
    message: Message = {"op": "done", "id": job_id, "error": storable(outcome.error),
                        "give_up": outcome.give_up}
    if outcome.retry_delay is not None:
        message["retry_delay"] = outcome.retry_delay
    return message


def outcome_from(message: Message) -> Outcome:
    """The outcome a child's "done" message says (``outcome_message``)."""
    if "result" in message:
        result = message["result"]
        return SUCCEEDED_NONE if result is None else Succeeded(result)
    if message.get("lost"):
        return Lost()
    if "snooze" in message:
        return Snoozed(message["snooze"])
    return Failed(message["error"], give_up=message.get("give_up", False),
                  retry_delay=message.get("retry_delay"))


def job_fields(job: Job) -> Message:
    """A claimed job's record as a run message carries it to a child whose task has hooks
    around runs (``job_from``)."""
    return asdict(job)


def job_from(fields: Message) -> Job:
    return Job(**{**fields, "status": JobStatus(fields["status"])})


# -- hooks around runs (Registry.before_run, after_run, on_dead) ------------------------------
#
# Called only for a task whose registry has hooks (``task.hooks``): without them a pool
# calls the handler as before, at the cost of one test.


def run_end(job: Job, task: Task, ctx: JobContext, outcome: Outcome) -> RunEnd:
    """What ``after_run`` is told of a run of ``job`` that ended with ``outcome``. Whether
    a failure is retried or dead is decided by the rule the store applies when it writes
    it (``store.attempts``), from the run's attempt, its allowance (the claimed job's: the
    claim lowered it to its task's), ``give_up`` and the delay it asked for."""
    if isinstance(outcome, Succeeded):
        return RunEnd(RunStatus.SUCCEEDED, result=outcome.result)
    if isinstance(outcome, Snoozed):
        return RunEnd(RunStatus.SNOOZED, retry_in=outcome.seconds)
    if isinstance(outcome, Lost):
        return RunEnd(RunStatus.CANCELLED, error="lease lost")
    if isinstance(outcome, Released):
        return RunEnd(RunStatus.CANCELLED, error="released")
    if ctx.cancelled.is_set() and not outcome.give_up:
        return RunEnd(RunStatus.CANCELLED, error=outcome.error)
    # job.max_attempts is the claimed row's, already lowered to the task's by the claim
    if outcome.give_up or used_up(job.attempts, job.max_attempts):
        return RunEnd(RunStatus.DEAD, error=outcome.error)
    return RunEnd(RunStatus.RETRIED, error=outcome.error,
                  retry_in=retry_in(job.attempts, job.max_attempts, next_delay(task, outcome)))


def _hook_failed(hook: Any, job: Job) -> None:
    log.exception("job=%d kind=%s: the hook %s raised (the run's outcome is unchanged)",
                  job.id, clean(job.kind, limit=80),
                  clean(getattr(hook, "__qualname__", repr(hook)), limit=80))


def call_hooks(hooks: list[Callable[..., Any]], job: Job, *args: Any) -> None:
    """Call each hook with ``(job, *args)`` in this thread (an ``async def`` hook on a
    loop of its own); one that raises is logged."""
    for hook in hooks:
        try:
            value = hook(job, *args)
            if inspect.isawaitable(value):
                import asyncio

                asyncio.run(_awaited(value))
        except Exception:  # noqa: BLE001 - a hook never changes an outcome
            _hook_failed(hook, job)


async def _awaited(value: Any) -> Any:
    return await value


async def acall_hooks(hooks: list[Callable[..., Any]], job: Job, *args: Any) -> None:
    """``call_hooks`` on the running event loop: an ``async def`` hook is awaited."""
    for hook in hooks:
        try:
            value = hook(job, *args)
            if inspect.isawaitable(value):
                await value
        except Exception:  # noqa: BLE001
            _hook_failed(hook, job)


def hooked(hooks: Hooks, task: Task, job: Job, ctx: JobContext, limit: int,
           reraise: tuple[type[BaseException], ...] = ()) -> Outcome:
    """A synchronous handler's run with its registry's hooks around it, in this thread:
    ``before_run``, the handler, then ``on_dead`` (when the job ends dead) and
    ``after_run``; the handler's outcome, whatever the hooks do. ``reraise``: exceptions
    that are not the handler's failure but the caller's to handle."""
    if hooks.before_run:
        call_hooks(hooks.before_run, job, ctx)
    outcome: Outcome
    try:
        outcome = returned(call_handler(task, job.payload, ctx, job.queue, job.trace_context),
                           limit)
    except BaseException as e:  # noqa: BLE001 - a handler's failure is data
        if isinstance(e, reraise):
            raise
        outcome = raised(e, task)
    end = run_end(job, task, ctx, outcome)
    if end.status is RunStatus.DEAD and hooks.on_dead:
        call_hooks(hooks.on_dead, job, ctx, end.error)
    if hooks.after_run:
        call_hooks(hooks.after_run, job, ctx, end)
    return outcome


async def ahooked(hooks: Hooks, task: Task, job: Job, ctx: JobContext, limit: int,
                  reraise: tuple[type[BaseException], ...] = ()) -> Outcome:
    """``hooked`` for an ``async def`` handler, on its event loop: the hooks run in the
    handler's task (a contextvar a hook sets, the handler sees)."""
    if hooks.before_run:
        await acall_hooks(hooks.before_run, job, ctx)
    outcome: Outcome
    try:
        outcome = returned(await call_handler(task, job.payload, ctx, job.queue,
                                              job.trace_context), limit)
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, reraise):
            raise
        outcome = raised(e, task)
    end = run_end(job, task, ctx, outcome)
    if end.status is RunStatus.DEAD and hooks.on_dead:
        await acall_hooks(hooks.on_dead, job, ctx, end.error)
    if hooks.after_run:
        await acall_hooks(hooks.after_run, job, ctx, end)
    return outcome
