"""The storage contract: job operations, not "run this SQL".

A backend (SQLite; PostgreSQL next) implements ``Store``; ``Queue`` validates input, reads
the clock and calls these. Every store must pass ``tests/store_contract/``. The rules
every backend keeps, beyond what each method says:

* **Time.** ``now`` is the current time from the queue's clock, in Unix seconds (UTC).
  Stores never read a clock inside an operation, so tests control time completely and a
  job's times all come from the same clock. A store shared by several hosts offers its
  server's clock (``server_clock``), which ``Queue`` uses when it was given none: leases
  are then judged by one clock whatever the hosts' own clocks say.
* **Fencing.** Every operation that takes a ``token`` changes the job only while it is
  ``running`` under that same token (the fence ``id, status='running', token``), checks
  the row count, and reports a mismatch (False / None / ``lost``) instead of writing.
  ``Queue`` turns that report into ``LeaseLost``.
* **Tokens** are fresh for every claim and never reused for the same job: a stale claim
  can never match a later one.
* **Transactions.** Each method is one transaction (or several short ones for bulk
  maintenance: reap, prune), so a crash leaves every job in exactly one state. The
  exceptions are the ``*_on`` operations, which run on the *caller's* connection, inside
  the caller's transaction: the store first checks that the connection reaches its own
  database (``same_database``) and can take the write, raising ``UnusableConnection``
  before writing anything, and never commits or rolls that transaction back.
* **Errors.** ``job_retry`` and ``job_cancel`` raise ``JobNotFound`` for a missing job and
  ``InvalidState`` for a job in the wrong state; nothing else raises for a missing job
  (reads return None or empty). Database failures become ``JobqError`` subclasses:
  ``DatabaseUnavailable``, ``StorageFull``, ``NotADatabase``, ``SchemaTooNew``,
  ``ForeignTable``; never a driver's own exception.
* **History.** Every attempt that ended is one row of ``job_attempts`` (failed, lease
  expired, lease lost, cancelled, released). The attempt that is running now, and the one
  that succeeded, have no row of their own: ``job_attempts`` synthesises them from the job
  (outcome ``running`` or ``succeeded``), so a success costs no extra write on the hot path.
* **Queue controls** (pause, concurrency and rate limits) are enforced by the claim
  statement itself, from the database's rows, so they hold across every worker process
  and host: a paused queue yields nothing; a queue with a concurrency limit never has more
  running jobs than it allows (its running jobs are counted in the claim, and concurrent
  claims of it take turns); a rate-limited queue never starts more jobs in a window than
  it allows (the window moves in the claim's transaction). Controls never slow or block
  the claims of queues without them, and a queue without controls has no row.
* **Concurrency keys.** A queue's key limits are enforced by the claim statement the same
  way: with ``key_concurrency`` N, no key ever has more than N running jobs in the queue;
  ``ordered``, a job of a key is claimed only once every job of its key with a smaller id
  has ended (none pending, running or waiting) and none is running. Jobs without a key are
  never held back by them. Counts come from the running rows, so a reaped lease frees its
  key with nothing to release.
* **Dependencies.** A job enqueued after others is ``waiting`` until they end. The end of
  a job (succeeded, dead or cancelled, by whatever path: completion, failure, the reaper,
  an operator) settles its waiting dependents in the same transaction: a dependent whose
  dependencies have all succeeded (or, with ``allow_failed``, ended) becomes pending; one
  whose dependency ended dead or cancelled is cancelled, with an error naming it, and so
  are its own dependents. A job without dependents pays nothing for this: its row says so.
* **Ids** are never handed out twice: ``job_prune`` never deletes the newest job, because
  a store may number new jobs max(id)+1 (SQLite's rowid does) and a reused id would let an
  old reference (a log line, an acknowledged id) name a different job.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from ..clock import Clock
from ..common.time_text import duration, timestamp
from ..types import (
    Attempt, Dependencies, Deps, ErrorGroup, ExtendResult, Hold, Job, NewJob, QueueStats, Rate,
    ScheduleInfo, Stats, Throughput, Watch, WorkerInfo,
)
from .copy_records import CopiedJob, CopyMark, CopyPage, CopyStart
from .upkeep import UpkeepStore

FINISHED_STATUSES = ("succeeded", "dead", "cancelled")
"""Every status ``job_prune`` may delete."""


class EndWatch(Watch, Protocol):
    """A change signal for jobs ending (``Store.watch_ends``): ``wait`` returns True soon
    after a job ends through any connection, the store's own included (maybe spuriously)."""

    def ended(self) -> frozenset[int] | None:
        """The ids the signals since the last call said ended; None when they cannot say
        (a poll, a reconnection, SQLite's file watch): look at every awaited job."""
        ...

RetryDelay = Callable[[int], float]
"""Seconds to wait before the next attempt, given the number of the attempt that failed."""


# The error recorded for an attempt an operator took back (``job_retry(force=True)``).
TAKEN_BACK = "taken back by an operator (retry --force): this worker's lease was revoked"
TERMINATED = "terminated: cancelled by an operator while it ran (cancel --terminate)"


# A job is taken for poison once this many of its attempts in a row lost their worker.
DEFAULT_MAX_LOST_ATTEMPTS = 3


def poisoned(lost: int) -> str:
    """The error recorded for a job that lost its worker ``lost`` attempts in a row."""
    return (f"poison job: its last {lost} attempts each ended with the worker lost (no "
            "heartbeat until the lease expired), so it was not retried again: a handler that "
            "crashes its process (a segfault, os._exit, the OOM killer) takes a thread-pool "
            "worker down with every job it runs; run such kinds with --pool process, where "
            "a crash fails only its own job")


def lease_expired(lease_until: float, now: float) -> str:
    """The error recorded for an attempt whose lease the reaper found run out, with the
    moment in UTC and how long before the reap it was, for people to read. The worker is
    in the attempt's record, not in the text: jobs lost with different workers are one
    failure to the Dead view's groups."""
    return (f"lease expired at {timestamp(lease_until)} ({duration(now - lease_until)} before "
            "it was reaped) with no heartbeat from its worker; the attempt counts as failed")


class ConnectionIdentity(NamedTuple):
    """Which database an application's connection reaches, read from that connection by
    ``store.connection_ops(conn).identity(conn)`` wherever the connection lives (a process
    pool's child too), and compared by the queue's store (``Store.same_database``).
    JSON-able as a list: ``ConnectionIdentity.from_json(json.loads(...))``."""

    store: str  # the backend: "sqlite" or "postgresql"
    key: tuple[object, ...]  # SQLite: (st_dev, st_ino) of the file; PostgreSQL: see its app_connection
    where: str  # the database, for messages

    @classmethod
    def from_json(cls, value: list[Any]) -> ConnectionIdentity:  # JSON, as json.loads gives it
        store, key, where = value
        return cls(str(store), tuple(key), str(where))


class Completion(NamedTuple):
    job_id: int
    token: int
    result: str | None  # JSON text


@dataclass(frozen=True, slots=True)
class ListFilter:
    status: str | None = None
    queue: str | None = None
    kind: str | None = None
    worker: str | None = None
    error_contains: str | None = None
    limit: int = 100
    offset: int = 0
    payloads: bool = True  # False: leave payload and result unread (None), for listings
    prefix: bool = False  # True: ``queue`` and ``kind`` match names that start with them
    search: tuple[str, ...] = ()  # each word in the id, kind, queue, worker or error (any case)
    key: str | None = None  # the jobs of this concurrency key (exactly)
    newest: int | None = None  # only the newest this many jobs (by id) are looked at


class Store(UpkeepStore, Protocol):
    def job_insert_many(self, jobs: Sequence[NewJob], now: float,
                        deps: Sequence[Deps | None] | None = None) -> list[int]:
        """Insert in one transaction, all or none; the ids in order. A job whose
        unique_key is held by a pending or running job (or an earlier item of the batch)
        yields that job's id instead of a new one.

        ``deps[i]``: what job i waits on (see Dependencies). ``JobNotFound`` (nothing
        stored) when one does not exist. The job is ``waiting`` until each has succeeded
        (or, with ``allow_failed``, ended); one already dead or cancelled cancels it."""
        ...

    def job_insert_many_on(self, conn: object, jobs: Sequence[NewJob], now: float,
                           deps: Sequence[Deps | None] | None = None) -> list[int]:
        """``job_insert_many`` (``deps`` included) on the application's own connection
        ``conn``, inside its transaction (one the store never commits or rolls back: the jobs exist once the
        caller commits, and never if it rolls back). Idle workers notice the commit as
        they notice any other. ``UnusableConnection`` (nothing written) when ``conn`` is
        closed, reaches another database, or has no transaction the write would join."""
        ...

    def job_complete_on(self, conn: object, completion: Completion, now: float) -> bool:
        """The fenced completion (``job_complete_many``'s, for one job) on the application's
        connection, inside its transaction, so that the job is succeeded in the same commit
        as the application's own writes. False: fenced out, nothing written (the caller
        rolls back). ``UnusableConnection`` as for ``job_insert_many_on``."""
        ...

    def same_database(self, identity: ConnectionIdentity) -> bool:
        """Whether a connection with this identity reaches this store's database (and its
        jobq tables). May refresh what the store knows of itself once before saying no (a
        PostgreSQL server restarted since the store opened)."""
        ...

    def job_claim(
        self, worker: str, queues: Sequence[str] | None, now: float, lease_until: float,
        limit: int, attempt_limits: Mapping[str, int] | None = None,
    ) -> list[Job]:
        """In one statement, move up to ``limit`` ready jobs (pending, ``run_at <= now``,
        in ``queues`` or any, within each queue's controls: see Queue controls) to running
        under fresh tokens, ``attempts + 1`` and a lease until ``lease_until``; highest priority first, then earliest run_at, then lowest
        id. Two concurrent claims never return the same job. Returned in that order.
        ``attempt_limits`` (kind -> limit): a claimed job of such a kind keeps the lower
        of its ``max_attempts`` and that limit, stored, so everyone (the reaper, the
        monitor) sees the limit that applies."""
        ...

    def job_next_run_at(self, queues: Sequence[str] | None, after: float) -> float | None:
        """The earliest ``run_at`` later than ``after`` among pending jobs (in ``queues``, or
        any): when the next delayed job or retry becomes ready; None when none waits. Cheap
        however many jobs are pending (an idle worker asks after a claim came up short)."""
        ...

    def job_extend_many(
        self, leases: Iterable[tuple[int, int]], now: float, lease_until: float
    ) -> ExtendResult:
        """Heartbeat: for each fenced ``(job_id, token)`` set the lease to ``lease_until``
        and the heartbeat to ``now``; report the jobs no longer ours, and those an operator
        asked to cancel. One transaction."""
        ...

    def job_check_many(self, leases: Iterable[tuple[int, int]]) -> ExtendResult:
        """``job_extend_many``'s answer without extending: the fenced ``(job_id, token)``
        no longer running under that token, and those an operator asked to cancel. One
        read, no write."""
        ...

    def job_complete_and_claim(
        self, completions: Sequence[Completion], now: float, worker: str,
        queues: Sequence[str] | None, lease_until: float, limit: int,
        attempt_limits: Mapping[str, int] | None = None,
    ) -> tuple[list[bool], list[Job]]:
        """``job_complete_many`` then ``job_claim``, in one transaction."""
        ...

    def job_complete_many(self, completions: Sequence[Completion], now: float) -> list[bool]:
        """Fenced: succeeded, with its result, at ``now``. One transaction; per item,
        whether it was accepted (False: fenced out, nothing written)."""
        ...

    def job_fail(
        self, job_id: int, token: int, error: str, now: float, retry_delay: RetryDelay
    ) -> Job | None:
        """Record the failed attempt; back to pending after ``retry_delay`` or dead when out
        of attempts (cancelled when cancellation was requested). None: fenced out."""
        ...

    def job_give_up(self, job_id: int, token: int, error: str, now: float) -> Job | None:
        """Record the failed attempt and end the job dead now, whatever attempts remain
        (cancelled when cancellation was requested). None: fenced out."""
        ...

    def job_release(self, job_id: int, token: int, now: float) -> bool:
        """Fenced: give an unfinished job back, runnable now; the attempt is recorded as
        ``released`` and not counted (cancelled instead when cancellation was requested).
        False: fenced out."""
        ...

    def job_snooze(self, job_id: int, token: int, now: float, until: float) -> bool:
        """Fenced: as ``job_release``, but runnable again at ``until``, the attempt recorded
        as ``snoozed`` (and not counted). False: fenced out."""
        ...

    def job_progress(
        self, job_id: int, token: int, fraction: float | None, message: str | None
    ) -> bool:
        """Fenced: record progress (0..1) and a message. False: fenced out."""
        ...

    def job_reap_expired(self, now: float, retry_delay: RetryDelay,
                         max_lost_attempts: int = DEFAULT_MAX_LOST_ATTEMPTS) -> int:
        """Running jobs whose lease ended before ``now`` go back to pending after
        ``retry_delay`` (or to dead when out of attempts; cancelled when cancellation was
        requested), each attempt recorded as ``lease expired``. A job whose latest
        ``max_lost_attempts`` attempts (this one included) all ended so goes dead with the
        ``poisoned`` error (0: never), read from the attempts already recorded. Each move is guarded by the
        token read, so a job completed or re-claimed meanwhile is left alone; safe to run
        from any number of processes at once. Returns how many jobs moved."""
        ...

    def job_dependencies(self, job_id: int) -> Dependencies:
        """What the job waits on and what waits on it, with their statuses now."""
        ...

    def job_dependency_results(self, job_id: int) -> dict[int, object]:
        """The results of the jobs ``job_id`` waits on (None for one that did not succeed)."""
        ...

    def queue_state(self, queue: str) -> QueueStats:
        """The queue's controls (with its rate window; none for a queue without) and its
        running jobs, read in one snapshot (the other counts are not read: zero)."""
        ...

    def key_holders(self, queue: str, key: str, job_id: int,
                    cap: int) -> tuple[list[int], int | None]:
        """(Ids of the running jobs of ``key`` in ``queue``, at most ``cap``; the id of the
        first pending, running or waiting job of the key before ``job_id``, or None), read
        in one snapshot."""
        ...

    def job_holds(self, job_ids: Sequence[int]) -> dict[int, Hold]:
        """What holds each of these jobs back in other jobs' rows (``Hold``), by id; an id
        with no job is left out. One statement, an index probe or two per job: for a page
        of jobs, not for a whole backlog."""
        ...

    def job_ahead(self, job: Job, now: float, cap: int) -> int:
        """How many ready jobs of ``job``'s queue a claim takes before it, counted up to
        ``cap`` (cheap however long the backlog)."""
        ...

    def job_get(self, job_id: int) -> Job | None:
        """The job, or None when there is none with that id."""
        ...

    def job_statuses(self, job_ids: Sequence[int]) -> dict[int, str]:
        """The status of each of ``job_ids`` that exists, in one read."""
        ...

    def job_list(self, where: ListFilter, now: float) -> list[Job]:
        """Jobs matching every field of ``where``. Order: pending by claim order,
        scheduled and retrying by run_at, running by lease end, finished newest first,
        no status: newest first."""
        ...

    def job_attempts(self, job_id: int) -> list[Attempt]:
        """Every attempt, oldest first, with the running or succeeded one synthesised
        (see the module's History rule). Empty for a missing job."""
        ...

    def job_retry(self, job_id: int, now: float, force: bool = False) -> None:
        """A dead or cancelled job back to pending, runnable now, with a fresh allowance
        of attempts. With ``force``, a running job too (one stuck under a worker that
        will never finish it): its attempt is recorded as ``lease lost`` and its token
        dropped, so the old holder is fenced out. ``JobNotFound``; ``InvalidState`` when
        it is pending or succeeded (or running, without ``force``), or another live job
        holds its unique key."""
        ...

    def job_retry_dead(self, where: ListFilter, now: float) -> int:
        """Every dead job matching ``where`` back to pending; returns how many. A job
        whose unique key another live job holds stays dead."""
        ...

    def job_cancel(self, job_id: int, now: float, terminate: bool = False) -> str:
        """Pending: cancelled now. Running: flagged for its worker (which learns it
        through ``job_check_many`` or its heartbeat); with ``terminate``, cancelled now
        too, its attempt recorded (``TERMINATED``) and its token dropped, so the run is
        fenced out of every later write. Returns the new status. ``JobNotFound``;
        ``InvalidState`` when it is already finished."""
        ...

    def job_copy_out(self, statuses: Sequence[str], after: int, limit: int) -> CopyPage:
        """Up to ``limit`` jobs with ids above ``after``, in id order, for a copy: those in
        ``statuses``, and the ended ones (succeeded, dead, cancelled) that a job in
        ``statuses`` waits or waited on; with the edges of each to the jobs it waits on
        (those pruned left out). One snapshot."""
        ...

    def copy_begin(self, key: str, record: str, queues: Mapping[str, QueueStats],
                   schedules: Sequence[ScheduleInfo], now: float) -> CopyStart:
        """In one transaction: add ``record`` to ``jobq_meta`` under ``key``, and the
        controls of ``queues`` and the ``schedules`` (their last ticks, not their jobs),
        each unless this store has one of that name already. Nothing written, and the
        record found returned, when ``key`` has one."""
        ...

    def job_copy_in(self, jobs: Sequence[CopiedJob], now: float,
                    mark: CopyMark | None = None) -> list[tuple[int, bool]]:
        """Add jobs carried over from another store, in one transaction, each with its
        status, attempts, last error, result, times and what it waits on; per job (its new
        id, False), or (the live job here holding its unique key, True) for a pending or
        waiting one that was not added. A live job is settled as an enqueue with ``after``
        would be: waiting while a job it waits on has not ended. ``mark``: the copy's record
        moves from ``mark.old`` to ``mark.new`` in the same transaction; ``InvalidState``,
        nothing written, when it does not read ``mark.old``."""
        ...

    def job_prune(self, finished_before: float, statuses: Sequence[str] = FINISHED_STATUSES,
                  dry_run: bool = False) -> dict[str, int]:
        """Delete finished jobs in ``statuses`` (some of succeeded, dead, cancelled) that
        finished before ``finished_before``, with their history; never a pending or running
        job, and never the newest job (see the module's Ids rule). Returns how many of each
        status were deleted (with ``dry_run``: would be, deleting nothing); a status with
        none may be left out."""
        ...

    def job_count(self, where: ListFilter, now: float) -> int:
        """How many jobs ``job_list`` would return without limit and offset."""
        ...

    def job_throughput(self, start: float, bucket: float, buckets: int) -> Throughput:
        """Per-bucket finished jobs and failed attempts from ``start`` on (index range scans)."""
        ...

    def job_dead_groups(self, where: ListFilter) -> list[ErrorGroup]:
        """Dead jobs matching ``where`` grouped by kind and error line (see ErrorGroup),
        largest group first, at most ``where.limit`` groups."""
        ...

    def stats(self, now: float, window: float) -> Stats:
        """Counts by status and queue, read in one snapshot; finished counts cover the
        last ``window`` seconds only (so stats stay as fast with a million finished jobs)."""
        ...

    def queue_pause(self, queue: str, paused: bool, now: float) -> None:
        """Pause (no claim starts its jobs; enqueue and running jobs go on) or resume."""
        ...

    def queue_set_limit(self, queue: str, concurrency: int | None, rate: Rate | None,
                        now: float, key_concurrency: int | None = None,
                        ordered: bool = False) -> None:
        """Set every limit (None, False: none of that kind). A rate with the window length
        it had keeps the current window's count (setting it again grants no new burst)."""
        ...

    def queue_controls(self) -> dict[str, QueueStats]:
        """Every queue with a control, its controls set (counts zero; ``stats`` has both)."""
        ...

    def schedule_register(self, schedule: ScheduleInfo) -> None:
        """Add the schedule's row, with ``last_tick`` as the tick it counts from, unless a
        row with its key exists (then nothing changes)."""
        ...

    def schedule_tick(self, key: str, tick: float, job: NewJob, now: float) -> int | None:
        """In one transaction: record ``tick`` as the schedule's latest and insert ``job``;
        the job's id. None (nothing written) when the schedule's latest tick is already
        ``tick`` or later: another worker enqueued it. The schedule's row must exist."""
        ...

    def schedule_rewind(self, key: str, recorded: float, tick: float, now: float) -> bool:
        """Set the schedule's latest tick back from ``recorded`` (a clock that ran ahead
        wrote it) to ``tick``, only if ``recorded`` is still the one there; whether it was."""
        ...

    def schedule_forget(self, key: str) -> bool:
        """Delete the schedule's row (one no worker declares any more); whether it was
        there. A worker that still declares it records it again, counting from then."""
        ...

    def schedule_list(self) -> list[ScheduleInfo]: ...

    def worker_register(self, info: WorkerInfo) -> None:
        """Add the worker to the registry (every field of ``info``, its heartbeat interval
        and lease term included), or replace the entry with its id."""
        ...

    def worker_beat(self, worker_id: str, now: float, busy: int,
                    children: Sequence[tuple[int, str, int | None]] | None = None) -> bool:
        """Record a beat (and, when given, the state of each child of a process pool);
        False when the worker has no entry (it was forgotten)."""
        ...

    def worker_deregister(self, worker_id: str) -> None: ...

    def worker_forget(self, seen: Sequence[tuple[str, float]]) -> int:
        """Delete each ``(worker id, last_seen)`` entry whose ``last_seen`` is still the
        value given (a worker that beat since it was read stays). One transaction; returns
        how many were deleted."""
        ...

    def worker_list(self) -> list[WorkerInfo]: ...

    @property
    def frozen(self) -> bool:
        """True when the store can only show a fixed copy of the data: it will never
        change."""
        ...

    def location(self) -> str:
        """Where the data lives, the same from every process and connection, with no user
        or password: what a copy records of its source (see ``Backend.location``)."""
        ...

    def server_clock(self) -> Clock | None:
        """The database server's clock, for a store shared by several hosts (PostgreSQL);
        None where the local clock is the one to use (SQLite: one machine)."""
        ...

    def describe(self) -> dict[str, str | None]:
        """What the store runs on, for reports: at least ``{"store": <backend name>}``."""
        ...

    def watch(self) -> Watch:
        """A new change signal for this store (see ``Watch``); the caller closes it."""
        ...

    def watch_ends(self) -> EndWatch:
        """A new signal for jobs ending, which ``Queue.wait`` sleeps on (see ``EndWatch``;
        PostgreSQL: LISTEN to the completions' channel); the caller closes it."""
        ...

    def write_blockers(self) -> list[str]:
        """Processes that hold the database's write lock while stopped (SIGSTOP, a
        debugger), described for people (``pid 4242 (jobq run ..., stopped)``): every
        write waits for them. [] where the store has no such lock or cannot tell."""
        ...

    def check(self) -> None:
        """Raise ``DatabaseUnavailable`` when the database this store opened is no longer
        the one its name reaches (SQLite: the file was deleted, or another moved over it),
        so that a worker stops instead of working on data nobody else sees. Cheap: workers
        call it every few seconds. A store whose connections fail loudly does nothing."""
        ...

    def close(self) -> None: ...
