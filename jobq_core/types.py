"""Plain records the rest of jobq passes around. Imports nothing else from jobq.

Times are Unix seconds (UTC) as floats, read from the queue's injected clock.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol


class JobStatus(enum.StrEnum):
    """A job's stored state. Compares equal to its string: ``JobStatus.PENDING == "pending"``."""

    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    DEAD = "dead"
    CANCELLED = "cancelled"
    WAITING = "waiting"  # enqueued ``after`` jobs that have not all ended yet


class RawJSON(str):
    """Stored text that is not valid JSON: something other than jobq wrote it. Kept as the
    text itself, so it can be shown; a worker fails such a job instead of guessing."""

    __slots__ = ()


FINISHED = frozenset({JobStatus.SUCCEEDED, JobStatus.DEAD, JobStatus.CANCELLED})
LIST_STATUSES = (*JobStatus, "scheduled", "retrying")
"""What ``Queue.list(status=...)`` takes: a stored status, or ``scheduled`` (pending, not
yet due) or ``retrying`` (pending after a failed attempt)."""


class Outcome(enum.StrEnum):
    """How one attempt ended."""

    RUNNING = "running"  # the attempt has not ended yet
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    LEASE_EXPIRED = "lease expired"  # the reaper found the lease run out
    LEASE_LOST = "lease lost"  # the worker learnt another claim had fenced it out
    CANCELLED = "cancelled"
    RELEASED = "released"  # handed back unfinished by a worker shutting down
    SNOOZED = "snoozed"  # the handler asked to run again later (not counted as an attempt)


@dataclass(frozen=True, slots=True)
class Job:
    id: int
    kind: str
    queue: str
    payload: Any
    priority: int
    status: JobStatus
    attempts: int
    max_attempts: int
    run_at: float
    lease_until: float | None
    worker: str | None
    token: int | None
    result: Any
    error: str | None
    created_at: float
    started_at: float | None
    finished_at: float | None
    unique_key: str | None = None
    progress: float | None = None
    progress_message: str | None = None
    cancel_requested: bool = False
    heartbeat_at: float | None = None
    key: str | None = None  # its concurrency key (``enqueue(key=...)``), for key limits
    # The W3C trace context of the span that enqueued it, as stored: the ``traceparent``
    # header's value, then a space and ``tracestate``'s when there is one. None: enqueued
    # with tracing off (``jobq_core.contrib.otel``). Kept as text: only tracing reads it.
    trace_context: str | None = None


@dataclass(frozen=True, slots=True)
class Attempt:
    """One run of a job: the history the monitor shows."""

    job_id: int
    attempt: int
    worker: str | None
    token: int | None
    started_at: float | None
    ended_at: float | None
    outcome: Outcome
    error: str | None


class WorkerState(enum.StrEnum):
    """How recently a worker was heard from, judged by ``WorkerInfo.state``."""

    OK = "ok"
    LATE = "late"  # missed a heartbeat
    LOST = "lost"  # missed two: probably dead; its jobs come back when their leases run out


DEFAULT_MAX_ATTEMPTS = 20
"""Attempts a job gets when neither its enqueue, its task nor its ``Queue`` says otherwise."""

DEFAULT_BEAT = 10.0
"""Seconds between heartbeats assumed for a worker that recorded none (an older jobq's):
a third of the default 30 s lease, as a worker beats."""

FORGET_AFTER = 300.0
"""Seconds without a beat after which a worker is forgotten (ten of its own beat
intervals, when that is longer): ``WorkerInfo.forgotten``."""


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    id: str
    host: str
    pid: int
    queues: tuple[str, ...] | None  # None: every queue
    concurrency: int
    started_at: float
    last_seen: float
    busy: int = 0
    beat_interval: float | None = None  # seconds between its beats; None: not recorded
    lease: float | None = None  # its default lease term; None: not recorded
    pool: str | None = None  # "thread" or "process"; None: not recorded
    # A process pool's children at its last beat: (pid, state, job id or None) each, the
    # state "starting", "idle", "busy" or "stopping". None: not recorded (threads: ()).
    children: tuple[tuple[int, str, int | None], ...] | None = None

    def expected_beat(self, beat: float) -> float:
        """The interval this worker is judged by: the one it recorded; else a third of the
        lease it recorded (a worker beats every third of its lease); else ``beat``."""
        if self.beat_interval and self.beat_interval > 0:
            return self.beat_interval
        if self.lease and self.lease > 0:
            return self.lease / 3
        return beat

    def state(self, now: float, beat: float) -> WorkerState:
        """Late after one missed beat, lost after two, each with half a beat of grace for
        scheduling jitter; lost too once silent for longer than the lease it recorded (by
        then every lease it held has run out, and its jobs can be taken back). A worker is
        judged by the heartbeat interval and lease it recorded when it registered; ``beat``
        is only assumed for one that recorded neither (an older jobq)."""
        every = self.expected_beat(beat)
        age = now - self.last_seen
        if age > 2.5 * every or (self.lease and self.lease > 0 and age > self.lease):
            return WorkerState.LOST
        if age > 1.5 * every:
            return WorkerState.LATE
        return WorkerState.OK

    def forgotten(self, now: float, beat: float) -> bool:
        """Whether it has been silent long enough to be dropped from the registry:
        ``FORGET_AFTER`` seconds, or ten of its beat intervals when that is longer."""
        return now - self.last_seen > max(FORGET_AFTER, 10 * self.expected_beat(beat))


_RATE_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True, slots=True)
class Rate:
    """A rate limit: at most ``limit`` jobs of a queue started per window of ``per``
    seconds, across all workers (a window opens at the first start after the last one
    closed). Written ``5/s``, ``100/m``, ``1000/h``."""

    limit: int
    per: float

    @classmethod
    def parse(cls, text: str) -> Rate:
        """``"N/s"``, ``"N/m"`` or ``"N/h"`` (N >= 1) -> Rate; ValueError naming the text."""
        n, sep, unit = str(text).strip().partition("/")
        if not sep or not n.isdigit() or int(n) < 1 or unit not in _RATE_UNITS:
            raise ValueError(f"a rate is N/s, N/m or N/h with N >= 1 (like 5/s), got {text!r:.40}")
        return cls(int(n), _RATE_UNITS[unit])

    def __str__(self) -> str:
        unit = next((u for u, s in _RATE_UNITS.items() if s == self.per), None)
        return f"{self.limit}/{unit}" if unit else f"{self.limit}/{self.per:g}s"


@dataclass(frozen=True, slots=True)
class QueueLimits:
    """A queue's limits as a set (``Queue.set_limit``'s arguments): what the application's
    code declares (``Registry.queue``), or what the database holds."""

    concurrency: int | None = None
    rate: Rate | None = None
    key_concurrency: int | None = None
    ordered: bool = False


@dataclass(frozen=True, slots=True)
class QueueStats:
    """One queue's counts, and the controls an operator set on it (a queue with controls
    but no jobs is listed too)."""

    pending: int = 0
    running: int = 0
    dead: int = 0
    waiting: int = 0  # jobs waiting for their dependencies
    # run_at of the longest-waiting ready job that could run (a held one is left out)
    oldest_pending_at: float | None = None
    # ready jobs held on purpose: the queue is paused, or their key is held (by ordering,
    # or its key_concurrency); counted in ``pending``, left out of the lag
    held: int = 0
    paused: bool = False  # no worker claims from it (``Queue.pause``)
    concurrency: int | None = None  # at most this many of its jobs running at once
    rate: Rate | None = None  # at most this many of its jobs started per window
    key_concurrency: int | None = None  # at most this many running jobs per key
    ordered: bool = False  # jobs of one key run one at a time, in enqueue (id) order
    keys_busy: int = 0  # distinct keys of its running jobs
    # The last rate window (under a rate limit): when it opened, and how many jobs it
    # started. It is over once ``rate.per`` seconds have passed since it opened.
    window_start: float | None = None
    window_count: int = 0
    # The limits the application's code declares (``Registry.queue``), as the worker that
    # applied them last recorded them; None when no code declares this queue's limits.
    declared: QueueLimits | None = None

    @property
    def limits(self) -> QueueLimits:
        """The limits the database holds, as a set."""
        return QueueLimits(self.concurrency, self.rate, self.key_concurrency, self.ordered)

    @property
    def drift(self) -> bool:
        """Whether the database holds other limits than the code declares (an operator
        changed them since: ``jobq limit``)."""
        return self.declared is not None and self.declared != self.limits

    @property
    def limited(self) -> bool:
        return self.concurrency is not None or self.rate is not None or self.keyed

    @property
    def keyed(self) -> bool:
        """Whether it has a key limit (``key_concurrency`` or ``ordered``)."""
        return self.key_concurrency is not None or self.ordered


@dataclass(frozen=True, slots=True)
class ScheduleInfo:
    """A periodic schedule as the database knows it (``Queue.schedules``): written by the
    workers whose registry has it. ``last_tick`` is the latest tick recorded (its job
    enqueued, or, for the first tick seen, the time the schedule started counting from)."""

    key: str  # identifies the schedule: kind, spec, queue and payload
    kind: str
    queue: str
    every: float | None  # seconds between ticks, or
    cron: str | None  # a 5-field cron expression, evaluated in ``tz`` (None: UTC)
    tz: str | None
    last_tick: float | None
    last_job: int | None  # the job the last tick enqueued (None: none yet)
    updated_at: float

    @property
    def spec(self) -> str:
        """``every 60s`` or ``cron */5 * * * *`` (with `` tz Europe/Paris``)."""
        text = f"every {self.every:g}s" if self.every is not None else f"cron {self.cron}"
        return text + (f" tz {self.tz}" if self.tz else "")


@dataclass(frozen=True, slots=True)
class Stats:
    """A snapshot of queue health. Finished counts cover the last ``window`` seconds only:

    succeeded jobs pile up without bound, so counting all of them would make stats slower
    as the table grows; ``prune`` removes old ones.
    """

    now: float
    window: float
    pending: int  # ready or scheduled, including retries
    scheduled: int  # pending with run_at in the future
    retrying: int  # pending after at least one attempt
    running: int
    dead: int
    succeeded_recent: int
    dead_recent: int
    cancelled_recent: int
    expired_leases: int  # running jobs whose lease has run out (the reaper has not run yet)
    oldest_pending_at: float | None
    queues: dict[str, QueueStats] = field(default_factory=dict)
    waiting: int = 0  # jobs waiting for their dependencies (``enqueue(after=...)``)

    @property
    def oldest_pending_age(self) -> float | None:
        if self.oldest_pending_at is None:
            return None
        return max(0.0, self.now - self.oldest_pending_at)


@dataclass(frozen=True, slots=True)
class ExtendResult:
    """Outcome of a heartbeat over several jobs."""

    lost: frozenset[int]  # no longer ours: the handler must stop, its result is discarded
    cancel_requested: frozenset[int]  # still ours, but an operator asked it to stop


@dataclass(frozen=True, slots=True)
class Throughput:
    """Jobs finished and attempts failed per time bucket, oldest bucket first.

    Bucket i covers ``[start + i*bucket, start + (i+1)*bucket)``. ``failed`` counts failed
    attempts (including the last attempt of each dead job), not jobs.
    """

    start: float
    bucket: float
    succeeded: tuple[int, ...]
    failed: tuple[int, ...]
    dead: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ErrorGroup:
    """Dead jobs of one kind that failed the same way: the same error line once the parts
    that vary from job to job are folded (``error_groups.group_key``: ``HTTP 502 for
    invoice INV-59476`` and ``... INV-59480`` are one group, ``HTTP 404 ...`` another).

    The error line is the first line of the error, or for a Python traceback its last
    line (the exception). ``key`` is that folded line: a job is in the group when its kind
    is ``kind`` and ``group_key(job.error) == key``. ``match`` is a substring every job of
    the group has in its error (the line up to its first folded part): ``error_contains=
    match`` with ``kind`` narrows a query to the group and maybe others that start alike,
    which ``key`` then tells apart.
    """

    kind: str
    line: str  # the error line of the group's most recent job
    count: int
    last_finished_at: float
    last_id: int  # the most recent dead job of the group
    queues: tuple[str, ...]
    match: str
    key: str = ""


class Watch(Protocol):
    """"Something may have changed; wait until it might have": how an idle worker sleeps
    until new work can exist, and how the monitor knows when to read again.

    A store with a push signal (SQLite: inotify on its files; PostgreSQL: LISTEN) wakes a
    waiter within milliseconds; one without polls a cheap version number behind the same
    interface. Writes made through the watched store's own connection need not count.
    """

    def wait(self, timeout: float) -> bool:
        """True as soon as another connection may have committed since the previous
        ``wait`` returned (or since the watch was made), or ``wake()`` was called; False
        when ``timeout`` seconds pass with neither. ``wait(0)`` only checks. A True may be
        spurious; a commit is never missed. Raises ``DatabaseUnavailable`` when the database
        is gone (e.g. its file was deleted or replaced)."""
        ...

    def wake(self) -> None:
        """Make a ``wait`` in another thread return True now. Safe from a signal handler."""
        ...

    def close(self) -> None: ...


class NewJob(NamedTuple):
    """A validated job ready to insert; payload is already JSON text. (A tuple: enqueue
    builds one per job, and a tuple is several times cheaper to build than a dataclass.)"""

    kind: str
    payload: str
    queue: str
    priority: int
    run_at: float
    max_attempts: int
    unique_key: str | None
    key: str | None = None
    trace_context: str | None = None  # see ``Job.trace_context``


class Deps(NamedTuple):
    """What a job being inserted waits on: ids of jobs that exist, and the positions of
    earlier jobs of the same batch (a chain, a group's callback). ``allow_failed``: it runs
    once they have all ended, however they ended; otherwise a dependency that ends dead or
    cancelled cancels it."""

    ids: tuple[int, ...] = ()
    earlier: tuple[int, ...] = ()
    allow_failed: bool = False


@dataclass(frozen=True, slots=True)
class Why:
    """Why a job is (not) running now (``Queue.why``): ``reason`` is one machine-readable
    name (see ``WHY_REASONS``), ``message`` a sentence for people, ``details`` what applies
    (ids, names, times, counts)."""

    job_id: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Hold:
    """What other jobs' rows say holds a job back (``Queue.holds``): ``key_running``, how
    many jobs of its key run in its queue now; ``key_earlier``, the first job of its key
    in its queue before it that has not ended (None: none; what holds a key in an ordered
    queue); ``waits_on``, how many of the jobs it waits on have not succeeded."""

    key_running: int = 0
    key_earlier: int | None = None
    waits_on: int = 0


WHY_REASONS = ("running", "waiting", "scheduled", "retry", "paused", "queue_limit", "rate_limit",
               "key_held", "no_worker", "ready", "succeeded", "dead", "cancelled")
"""Every ``Why.reason``, in the order they are tried: the first that applies wins."""


COPY_STATUSES = (JobStatus.PENDING, JobStatus.RUNNING, JobStatus.WAITING, JobStatus.DEAD)
"""The statuses ``Queue.copy_from`` (``jobq copy``) takes, by default all four. A running
job arrives pending: its lease and token belong to the store it was claimed in."""


class CopySkip(enum.StrEnum):
    """Why ``Queue.copy_from`` left a job behind (the keys of ``CopyReport.skipped``)."""

    UNIQUE_KEY_HELD = "unique_key_held"
    DEPENDENCY_NOT_COPIED = "dependency_not_copied"
    DEPENDENCY_COPIED_EARLIER = "dependency_copied_earlier"

    @property
    def text(self) -> str:
        """The reason in words."""
        return _COPY_SKIPS[self]


_COPY_SKIPS = {
    CopySkip.UNIQUE_KEY_HELD: "a live job of the destination holds its unique key",
    CopySkip.DEPENDENCY_NOT_COPIED: "it waits on a job that was not copied",
    CopySkip.DEPENDENCY_COPIED_EARLIER: "it waits on a job an earlier run of the copy "
                                        "copied, whose new id this run does not know",
}


@dataclass(frozen=True, slots=True)
class CopyReport:
    """What ``Queue.copy_from`` did (given to its ``on_page``: what it has done so far)."""

    copied: dict[str, int]  # by status in the source: every status asked for, and any other
    #                         of the finished jobs that copied jobs wait on
    skipped: dict[str, dict[str, int]]  # jobs left behind: status -> CopySkip -> how many
    queues: tuple[str, ...] = ()  # whose controls (pause, limits) were copied
    queues_kept: tuple[str, ...] = ()  # the destination had controls for them: kept its own
    schedules: tuple[str, ...] = ()  # keys of the schedules copied, with their last ticks
    schedules_kept: tuple[str, ...] = ()  # the destination had them: kept its own
    through: int = 0  # the source's last job id read (by this copy and those it resumed)
    resumed: bool = False  # it went on from an earlier copy's record


@dataclass(frozen=True, slots=True)
class Link:
    """One end of a dependency (``Queue.dependencies``): a job and its status now."""

    job_id: int
    kind: str
    status: JobStatus
    allow_failed: bool = False  # the waiting job runs whatever this one's end


@dataclass(frozen=True, slots=True)
class Dependencies:
    """What a job waits on, and what waits on it (``Queue.dependencies``)."""

    waits_on: tuple[Link, ...] = ()
    waited_by: tuple[Link, ...] = ()


class PoolKind(enum.StrEnum):
    """Where a worker's handlers run (``Worker(pool=...)``, ``jobq run --pool``), as the
    worker registry records it. Compares equal to its string: ``PoolKind.PROCESS ==
    "process"``, so a registry entry read back as text matches it."""

    THREAD = "thread"  # threads of the worker's process (the default)
    PROCESS = "process"  # child processes, one handler at a time each
