"""New jobs as the store takes them: every check ``enqueue`` makes, and the payload's JSON.

Kept apart from ``Queue`` so that a bulk load can check every item before it opens (or
creates) a database: ``prepare(items)``.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Protocol

from ..common.checks import LATEST_TIME, check_int, check_name, check_seconds
from ..clock import SYSTEM_CLOCK, Clock
from ..errors import PayloadTooLarge
from ..store.base import Completion
from ..store.copy_records import CopiedJob
from ..types import DEFAULT_MAX_ATTEMPTS, Deps, Job, JobStatus, NewJob, RawJSON

# What enqueue_many, chain and group take: (kind,) or (kind, payload), or a dict of
# enqueue's arguments.
Item = tuple[Any, ...] | Mapping[str, Any]
DEFAULT_MAX_PAYLOAD = 10 * 1024 * 1024


class TaskDefaults(Protocol):
    """What a job of a registered kind takes when its enqueue does not say (a ``Task``)."""

    queue: str | None
    priority: int
    max_attempts: int | None


class Tasks(Protocol):
    """Where those defaults are found by kind (a ``Registry``)."""

    def get(self, kind: str) -> TaskDefaults | None: ...


_ENQUEUE_KEYS = frozenset(
    {"kind", "payload", "queue", "priority", "delay", "run_at", "max_attempts", "unique_key",
     "key"}
)


current_trace_context: Callable[[], str | None] | None = None
"""Set while tracing is on (``jobq_core.contrib.otel.instrument``): the trace context to
store with a job made now (``Job.trace_context``: its enqueue's producer span), or None.
None (no tracing): making a job costs one test of it."""

_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _not_serializable(o: Any) -> Any:
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def _one_encoder() -> Any:
    """``_JSON.encode`` builds a new C encoder on every call, which costs more than encoding
    a small payload; this one is built once, through CPython's private ``c_make_encoder``.
    It has no circular-reference check: a cycle ends in RecursionError, which
    ``encode_json`` reports like the standard encoder does.

    Kept for its measured gain (``python bench/encode_ab.py --instructions``, both
    variants in one run, CPython 3.11): instructions per job without it, on SQLite,
    enqueue_many 94,272 against 86,422 (+9.1 %) for ``{"i": i}`` and +6.7 % for a
    12-field payload; enqueue +6.7 % and +6.0 %. Timed (``bench/encode_ab.py``, median of
    15 alternating rounds, a shared 2-core machine): encode_json alone 2.3x faster for
    ``{"i": i}``, enqueue_many 1.11x; enqueue within the noise of its commits.
    ``tests/core/test_json_encoder.py`` fails if the hook changes shape: if it is gone on
    CPython, or writes anything the public ``JSONEncoder`` would not."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator (not CPython)
        return _JSON.encode
    chunks = make(None, _not_serializable, json.encoder.encode_basestring, None, ":", ",",
                  False, False, False)
    return lambda value: "".join(chunks(value, 0))


_encode = _one_encoder()


def encode_json(value: Any, what: str = "payload") -> str:
    """Strict JSON (no NaN or Infinity): what another language's JSON reader accepts too."""
    try:
        text: str = _encode(value)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{what} is not JSON-serializable: {e}") from None
    except RecursionError:
        raise ValueError(f"{what} is not JSON-serializable: it refers to itself, or is "
                         "nested too deeply") from None
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{what} holds a string that is not valid Unicode "
                             "(a lone surrogate, e.g. from undecodable bytes)") from None
    return text


def completions(items: Iterable[tuple[int, int, Any]]) -> list[Completion]:
    """``(job id, token, result)`` items as the store takes them, each result as JSON."""
    return [Completion(job_id, token, None if result is None else encode_json(result, "result"))
            for job_id, token, result in items]


def copied_job(job: Job, now: float, deps: Deps | None = None,
               schedules: tuple[str, ...] = ()) -> CopiedJob:
    """A job read from another queue, as ``job_copy_in`` writes it: its payload and result
    as they were stored (a ``RawJSON`` one is not re-encoded). A running job becomes pending,
    its attempt counted (as the reaper counts a lost one): its lease and token are the
    other store's. One an operator asked to cancel becomes cancelled now, as the reaper
    would end it."""
    status, finished_at = job.status, job.finished_at
    if status == JobStatus.RUNNING:
        status = JobStatus.CANCELLED if job.cancel_requested else JobStatus.PENDING
        finished_at = now if job.cancel_requested else None
    new = NewJob(job.kind, _stored(job.payload), job.queue, job.priority, job.run_at,
                 job.max_attempts, job.unique_key, job.key, job.trace_context)
    return CopiedJob(new, str(status), job.attempts, job.error, job.created_at, finished_at,
                     None if job.result is None else _stored(job.result, "result"), deps,
                     schedules)


def _stored(value: Any, what: str = "payload") -> str:
    return str(value) if isinstance(value, RawJSON) else encode_json(value, what)


def prepare(items: Iterable[Item], *,
            max_attempts: int = DEFAULT_MAX_ATTEMPTS,
            max_payload_bytes: int = DEFAULT_MAX_PAYLOAD,
            clock: Clock = SYSTEM_CLOCK) -> list[NewJob]:
    """Check and encode jobs as ``Queue.enqueue_many`` would, writing nothing: a bulk load
    prepares every item before its first write, so a bad item anywhere writes nothing, then
    passes slices of the result to ``enqueue_many``. Delays count from now."""
    maker = JobMaker(max_attempts, max_payload_bytes)
    now = clock.now()
    return [maker.from_item(item, now) for item in items]


class JobMaker:
    """Turns ``enqueue``'s arguments into a ``NewJob``, or raises what was wrong."""

    def __init__(self, max_attempts: int, max_payload_bytes: int):
        check_int("max_attempts", max_attempts, minimum=1)
        check_int("max_payload_bytes", max_payload_bytes, minimum=2)
        self.max_attempts = max_attempts
        self.max_payload_bytes = max_payload_bytes
        # The registry whose tasks' queue, priority and max_attempts a job of their kind
        # takes where its enqueue gave none (``Queue(registry=)``, ``Registry(queue=)``).
        self.tasks: Tasks | None = None

    def from_item(self, item: Item | NewJob,
                           now: float) -> NewJob:
        if isinstance(item, tuple) and len(item) in (1, 2):  # the common case first
            return self.default_job(item[0], item[1] if len(item) == 2 else None, now)
        if type(item) is NewJob:  # from prepare(): checked already
            return item
        if isinstance(item, Mapping):
            unknown = set(item) - _ENQUEUE_KEYS
            if unknown:
                raise TypeError(f"unknown key(s) {', '.join(sorted(unknown))}; known: "
                                f"{', '.join(sorted(_ENQUEUE_KEYS))}")
            if "kind" not in item:
                raise TypeError("an enqueue item needs a 'kind'")
            args = {"payload": None, "queue": None, "priority": None, "delay": 0,
                    "run_at": None, "max_attempts": None, "unique_key": None, "key": None,
                    **item}
            return self.new_job(args["kind"], args["payload"], args["queue"], args["priority"],
                                 args["delay"], args["run_at"], args["max_attempts"],
                                 args["unique_key"], now, args["key"])
        raise TypeError(f"an enqueue item is a (kind, payload) tuple or a dict, got {item!r:.80}")

    def default_job(self, kind: Any, payload: Any, now: float) -> NewJob:
        """A job with every option at its default: only the kind needs checking."""
        check_name("kind", kind)
        task = None if self.tasks is None else self.tasks.get(kind)
        if task is not None and (task.queue is not None or task.priority
                                 or task.max_attempts is not None):
            return self.new_job(kind, payload, None, None, 0, None, None, None, now)
        job = NewJob(kind, self.payload_text(payload), "default", 0, now, self.max_attempts,
                     None)
        return job if current_trace_context is None else _traced(job)

    def new_job(self, kind: str, payload: Any, queue: str | None, priority: int | None,
                delay: float, run_at: float | datetime | None, max_attempts: int | None,
                unique_key: str | None, now: float, key: str | None = None) -> NewJob:
        """A job of ``enqueue``'s arguments; ``queue``, ``priority`` and ``max_attempts``
        given as None take the kind's task's (when the registry is known), else jobq's
        defaults: ``default``, 0 and the queue's ``max_attempts``."""
        check_name("kind", kind)
        if queue is None or priority is None or max_attempts is None:
            task = None if self.tasks is None else self.tasks.get(kind)
            if task is not None:
                queue = task.queue if queue is None else queue
                priority = task.priority if priority is None else priority
                max_attempts = task.max_attempts if max_attempts is None else max_attempts
        queue = "default" if queue is None else queue
        priority = 0 if priority is None else priority
        check_name("queue", queue)
        check_int("priority", priority)
        if max_attempts is None:
            max_attempts = self.max_attempts
        check_int("max_attempts", max_attempts, minimum=1)
        if unique_key is not None:
            check_name("unique_key", unique_key)
        if key is not None:
            check_name("key", key)
        job = NewJob(kind, self.payload_text(payload), queue, priority,
                     _start_time(delay, run_at, now), max_attempts, unique_key, key)
        return job if current_trace_context is None else _traced(job)

    def payload_text(self, payload: Any) -> str:
        text = encode_json(payload)
        if len(text) * 4 > self.max_payload_bytes:  # a character is at most 4 UTF-8 bytes
            size = len(text.encode("utf-8"))
            if size > self.max_payload_bytes:
                raise PayloadTooLarge(size, self.max_payload_bytes)
        return text


def _traced(job: NewJob) -> NewJob:
    hook = current_trace_context  # read once: tracing may stop meanwhile
    return job if hook is None else job._replace(trace_context=hook())


def _start_time(delay: Any, run_at: float | datetime | None, now: float) -> float:
    """When the job may start: never past LATEST_TIME, so every reader can show it."""
    check_seconds("delay", delay, maximum=math.inf)
    start: float
    if run_at is None:
        start = now + delay
    elif delay:
        raise ValueError("give delay or run_at, not both")
    elif isinstance(run_at, datetime):
        if run_at.tzinfo is None:
            raise ValueError("run_at must be timezone-aware (e.g. datetime.now(timezone.utc))")
        start = run_at.timestamp()
    else:
        check_seconds("run_at", run_at, maximum=LATEST_TIME)
        start = float(run_at)
    if start > LATEST_TIME:
        raise ValueError("the job would start after the year 9999")
    return start
