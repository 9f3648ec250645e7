"""Queue: jobq's public API. Checks input (``checks.py``), reads the clock, calls the store.
Every method is safe to call from several threads; any number of processes may open the
same database file."""
from __future__ import annotations

import builtins
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from .api.app_connections import unwrap
from .backoff import Backoff
from .common.checks import (
    check_attempt_limits, check_buckets, check_claim, check_fraction, check_int, check_lease,
    check_limits, check_name, check_queues, check_seconds,
)
from .clock import SYSTEM_CLOCK, Clock
from .api.copying import Copying
from .api.filters import job_filter
from .api.waiting import Waiting, stop_waiting
from .errors import LeaseLost, Snooze, UnusableConnection
from .api.new_jobs import (
    DEFAULT_MAX_PAYLOAD, Item, JobMaker, Tasks, completions,
)
from .store import open_store
from .store.pool import reach
from .common.textsafe import storable
from .store.base import (
    DEFAULT_MAX_LOST_ATTEMPTS, FINISHED_STATUSES, ConnectionIdentity, Store,
)
from .api.why import Reasons
from .api.worker_records import WorkerRecords
from .api.upkeep import Upkeep
from .api.workflows import Workflows
from .types import (
    DEFAULT_MAX_ATTEMPTS, Attempt, ErrorGroup, ExtendResult, Job, JobStatus, NewJob, QueueStats,
    Rate, Stats, Throughput, Watch,
)

DEFAULT_LEASE = 30.0


class Queue(Workflows, Reasons, WorkerRecords, Copying, Upkeep, Waiting):
    """A job queue in the database ``database`` names: a file path or ``sqlite:///path``
    (an SQLite file, created owner-only if missing), or ``postgresql://user@host/db``
    (jobq's tables are created in that existing database; see ``PostgresStore`` for its
    options). A bad database string or option fails here; a PostgreSQL queue connects on
    its first use (``check()`` connects now), so a module-level ``Queue(url)`` neither
    fails an import while the server is down nor holds a connection in every process that
    imports it.

    ``clock``: the time source (tests inject a ``FakeClock``). By default the PostgreSQL
    server's clock on PostgreSQL (workers on several hosts judge leases by one clock), and
    this machine's on SQLite.

    ``store_options`` belong to the store the database string picks. SQLite's:
    ``synchronous="NORMAL"`` (the default) loses nothing committed when a process dies, and
    a power loss may roll back the last commits; ``"FULL"`` syncs every commit to disk.
    ``busy_timeout`` (seconds, default 30) is how long a write waits for the lock;
    ``read_only=True`` opens a connection that cannot write; ``create=False`` refuses a
    missing file instead of creating it.

    ``registry``: the ``Registry`` of the application's tasks (also set by
    ``Registry(queue=...)`` and by a ``Worker``): a job enqueued by kind takes its task's
    ``queue``, ``priority`` and ``max_attempts`` where the enqueue gives none, as
    ``task.enqueue`` does.
    """

    def __init__(self, database: str | os.PathLike[str], *, clock: Clock | None = None,
                 max_attempts: int = DEFAULT_MAX_ATTEMPTS, backoff: Backoff | None = None,
                 max_payload_bytes: int = DEFAULT_MAX_PAYLOAD, store: Store | None = None,
                 registry: Tasks | None = None, **store_options: Any):
        self.backoff = backoff or Backoff()
        self._jobs = JobMaker(max_attempts, max_payload_bytes)
        self._jobs.tasks = registry
        self.database = os.fsdecode(os.fspath(database))
        self.store: Store = store if store is not None else open_store(database, **store_options)
        # An injected clock rules everything (tests); else the server's, where the store is
        # shared by several hosts (one clock judges every lease), else this machine's. The
        # server's is synced when the store connects, on first use: asking for it reads
        # nothing yet.
        self.clock: Clock = clock or self.store.server_clock() or SYSTEM_CLOCK

    # -- producing ------------------------------------------------------------------------

    def enqueue(self, kind: str, payload: Any = None, *, queue: str | None = None,
                priority: int | None = None, delay: float = 0, run_at: float | datetime | None = None,
                max_attempts: int | None = None, unique_key: str | None = None,
                conn: Any = None, after: Iterable[int] | None = None,
                allow_failed: bool = False, key: str | None = None) -> int:
        """Add a job and return its id. With ``unique_key``, while a job with that key is
        pending or running, return that job's id instead of adding another.

        With ``conn`` (the application's own connection to the same database: an
        ``sqlite3.Connection`` on the same file, a ``psycopg.Connection`` on the same
        PostgreSQL database, a SQLAlchemy ``Connection`` or ``Session`` over either), the
        job is inserted in the caller's transaction, which jobq never commits or rolls
        back: roll back and the job never existed; commit and it is there, and idle workers
        notice it. Raises ``UnusableConnection`` (nothing written) for a closed connection,
        one to another database, or one in autocommit mode with no transaction open.

        With ``after`` (ids), the job waits until they have all succeeded (see the
        Workflows guide: ``allow_failed``, and what a dependency's failure does).

        ``key`` (a name, such as ``"customer:7"``): the job's concurrency key, which its
        queue's key limits apply to (``set_limit(key_concurrency=..., ordered=...)``).

        ``queue`` (default ``"default"``), ``priority`` (0) and ``max_attempts`` (the
        queue's): left out, a kind the ``registry`` has takes its task's."""
        if after is not None:
            return self._insert_linked([{"kind": kind, "payload": payload, "queue": queue,
                                         "priority": priority, "delay": delay,
                                         "run_at": run_at, "max_attempts": max_attempts,
                                         "unique_key": unique_key, "after": after,
                                         "allow_failed": allow_failed, "key": key}],
                                       [None], conn)[0]
        now = self.clock.now()
        # Every option at its default: skip checking them one by one (enqueue 7 % faster,
        # 0.928x without, jobq bench median of 3; 5 % fewer instructions).
        if (queue is None and priority is None and type(delay) is int and delay == 0
                and run_at is None and max_attempts is None and unique_key is None
                and key is None and conn is None):
            return self.store.job_insert_many([self._jobs.default_job(kind, payload, now)],
                                              now)[0]
        job = self._jobs.new_job(kind, payload, queue, priority, delay, run_at, max_attempts,
                                 unique_key, now, key)
        if conn is not None:
            return self.store.job_insert_many_on(unwrap(conn), [job], now)[0]
        return self.store.job_insert_many([job], now)[0]

    def enqueue_many(self, items: Iterable[Item], *,
                     conn: Any = None) -> list[int]:
        """Add many jobs in one transaction: all of them or, on error, none.

        Items are ``(kind, payload)`` tuples, dicts of ``enqueue``'s arguments, or what
        ``prepare`` returned. With ``conn``, in the caller's transaction on the
        application's connection (see ``enqueue``).
        """
        items = list(items)
        if any(type(i) is not tuple and isinstance(i, Mapping)  # tuples, the usual item,
               and ("after" in i or "allow_failed" in i) for i in items):  # skip the ABC check
            return self._insert_linked(items, [None] * len(items), conn)
        now = self.clock.now()
        jobs = [self._jobs.from_item(item, now) for item in items]
        if conn is not None:
            return self.store.job_insert_many_on(unwrap(conn), jobs, now) if jobs else []
        return self.store.job_insert_many(jobs, now) if jobs else []

    def prepare(self, items: Iterable[Item]) -> builtins.list[NewJob]:
        """Check and encode jobs as ``enqueue_many`` would, writing nothing (see
        ``new_jobs.prepare``, which needs no open queue)."""
        now = self.clock.now()
        return [self._jobs.from_item(item, now) for item in items]

    @property
    def registry(self) -> Tasks | None:
        """The registry whose tasks' defaults jobs of their kinds take (see the class)."""
        return self._jobs.tasks

    @registry.setter
    def registry(self, registry: Tasks | None) -> None:
        self._jobs.tasks = registry

    @property
    def max_attempts(self) -> int:
        """Attempts a job gets when neither it nor its task says otherwise."""
        return self._jobs.max_attempts

    @property
    def max_payload_bytes(self) -> int:
        return self._jobs.max_payload_bytes

    # -- consuming ------------------------------------------------------------------------

    def claim(self, worker_id: str, *, queues: Sequence[str] | None = None,
              lease: float = DEFAULT_LEASE) -> Job | None:
        """Take the next ready job (highest priority, then earliest run_at, then lowest id)
        under a fresh lease and token, or None when no job is ready."""
        jobs = self.claim_many(worker_id, 1, queues=queues, lease=lease)
        return jobs[0] if jobs else None

    def claim_many(self, worker_id: str, limit: int, *, queues: Sequence[str] | None = None,
                   lease: float = DEFAULT_LEASE, attempt_limits: Mapping[str, int] | None = None,
                   ) -> list[Job]:
        """Take up to ``limit`` ready jobs in one statement, each with its own token.
        ``attempt_limits`` (kind -> most attempts; a worker passes its tasks'
        ``max_attempts``): a claimed job of such a kind has its ``max_attempts`` lowered
        to that limit, in the database, so the reaper and the monitor apply it too."""
        queues = check_claim(worker_id, limit, queues, lease, least=1)
        now = self.clock.now()
        return self.store.job_claim(worker_id, queues, now, now + lease, limit,
                                    check_attempt_limits(attempt_limits))

    def next_run_at(self, *, queues: Sequence[str] | None = None) -> float | None:
        """When the next pending job that is not ready yet (delayed, or a retry waiting out
        its backoff) becomes ready, in this queue's clock; None when there is none. A cheap
        read: an idle worker sets its timer by it."""
        return self.store.job_next_run_at(check_queues(queues), self.clock.now())

    def extend(self, job_id: int, token: int, *, lease: float = DEFAULT_LEASE) -> None:
        """Push the lease ``lease`` seconds past now. Raises ``LeaseLost`` (and writes
        nothing) when the job is no longer running under this token."""
        if self.extend_many([(job_id, token)], lease=lease).lost:
            raise LeaseLost(job_id, token)

    def extend_many(self, leases: Iterable[tuple[int, int]], *,
                    lease: float = DEFAULT_LEASE) -> ExtendResult:
        """Heartbeat for several jobs in one transaction; reports which were lost and which
        an operator asked to cancel, instead of raising."""
        check_lease(lease)
        now = self.clock.now()
        return self.store.job_extend_many(leases, now, now + lease)

    def check_leases(self, leases: Iterable[tuple[int, int]]) -> ExtendResult:
        """``extend_many``'s answer (runs lost, cancels asked), extending nothing: one read."""
        return self.store.job_check_many(leases)

    def complete(self, job_id: int, token: int, result: Any = None, *, conn: Any = None) -> None:
        """Mark the job succeeded and store ``result`` (JSON). Raises ``LeaseLost`` (and
        writes nothing) when the job is no longer running under this token.

        With ``conn`` (the application's own connection, as for ``enqueue``), the fenced
        completion runs inside the caller's transaction on it: when the caller commits,
        the job is succeeded in the same commit as the application's own writes. On
        ``LeaseLost`` the caller rolls its writes back with it: another run owns the job.
        ``UnusableConnection`` (nothing written) as for ``enqueue``."""
        completion, = completions([(job_id, token, result)])
        if conn is not None:
            accepted = self.store.job_complete_on(unwrap(conn), completion, self.clock.now())
        else:
            accepted = self.store.job_complete_many([completion], self.clock.now())[0]
        if not accepted:
            raise LeaseLost(job_id, token)

    def check_connection(self, identity: ConnectionIdentity) -> None:
        """Raise ``UnusableConnection`` unless ``identity`` (read from an application's
        connection where it lives: ``store.connection_ops(conn).identity(conn)``, e.g. in
        a process pool's child) reaches this queue's database."""
        if not self.store.same_database(identity):
            raise UnusableConnection(f"the connection given with conn= is to "
                                     f"{identity.where}, not to this queue's database; "
                                     "nothing was written")

    def complete_many(self, items: Iterable[tuple[int, int, Any]]) -> list[bool]:
        """Complete several jobs in one transaction; per item, whether it was accepted."""
        done = completions(items)
        return self.store.job_complete_many(done, self.clock.now()) if done else []

    def complete_and_claim(self, items: Iterable[tuple[int, int, Any]], worker_id: str,
                           limit: int, *, queues: Sequence[str] | None = None,
                           lease: float = DEFAULT_LEASE, attempt_limits: Mapping[str, int]
                           | None = None) -> tuple[list[bool], list[Job]]:
        """``complete_many(items)`` and ``claim_many(worker_id, limit, ...)`` in one
        transaction: a busy worker commits once per batch instead of twice."""
        queues = check_claim(worker_id, limit, queues, lease, least=0)
        done = completions(items)
        now = self.clock.now()
        return self.store.job_complete_and_claim(done, now, worker_id, queues, now + lease,
                                                 limit, check_attempt_limits(attempt_limits))

    def fail(self, job_id: int, token: int, error: str, *, retry_in: float | None = None) -> Job:
        """Record a failed attempt. The job runs again after a backoff delay (``retry_in``
        seconds instead, when given; 0 means now), or goes dead when its attempts are used
        up. Raises ``LeaseLost`` (and writes nothing) when the job is no longer ours."""
        delay: Callable[[int], float] = self.backoff.delay
        if retry_in is not None:
            check_seconds("retry_in", retry_in)
            delay = lambda _attempt: float(retry_in)  # noqa: E731
        return _ours(self.store.job_fail(job_id, token, storable(str(error)), self.clock.now(),
                                         delay), job_id, token)

    def give_up(self, job_id: int, token: int, error: str) -> Job:
        """Record a failed attempt and end the job dead at once, whatever attempts remain
        (a handler that knows retrying cannot help, or a kind's own attempt limit). Raises
        ``LeaseLost`` (and writes nothing) when the job is no longer ours."""
        return _ours(self.store.job_give_up(job_id, token, storable(str(error)),
                                            self.clock.now()), job_id, token)

    def release(self, job_id: int, token: int) -> None:
        """Hand an unfinished job back, runnable at once, without counting the attempt
        (a worker shutting down does this). Raises ``LeaseLost`` when no longer ours."""
        if not self.store.job_release(job_id, token, self.clock.now()):
            raise LeaseLost(job_id, token)

    def snooze(self, job_id: int, token: int, seconds: float) -> None:
        """Put a running job back to run again in ``seconds``, the attempt not counted
        (recorded as ``snoozed``). Raises ``LeaseLost`` when no longer ours."""
        now = self.clock.now()
        if not self.store.job_snooze(job_id, token, now, now + Snooze(seconds).seconds):
            raise LeaseLost(job_id, token)

    def progress(self, job_id: int, token: int, fraction: float | None,
                 message: str | None = None) -> None:
        fraction = check_fraction("progress fraction", fraction)
        if not self.store.job_progress(job_id, token, fraction,
                                       None if message is None else storable(str(message))):
            raise LeaseLost(job_id, token)

    def reap(self, *, max_lost_attempts: int = DEFAULT_MAX_LOST_ATTEMPTS) -> int:
        """Running jobs whose lease ran out go back to pending after backoff, or to dead
        when out of attempts, or when their last ``max_lost_attempts`` attempts (this one
        included) all lost their worker: a poison job, likely what kills them (0: never).
        Safe to run from many processes at once."""
        check_int("max_lost_attempts", max_lost_attempts, minimum=0)
        return self.store.job_reap_expired(self.clock.now(), self.backoff.delay,
                                           max_lost_attempts)

    # -- reading --------------------------------------------------------------------------

    def get(self, job_id: int) -> Job | None:
        check_int("job id", job_id)
        return self.store.job_get(job_id)

    def list(self, status: str | None = None, queue: str | None = None, kind: str | None = None,
             *, worker: str | None = None, error_contains: str | None = None, limit: int = 100,
             offset: int = 0, payloads: bool = True, prefix: bool = False,
             search: Sequence[str] = (), key: str | None = None,
             newest: int | None = None) -> builtins.list[Job]:
        """Jobs matching every filter given. ``status`` may also be ``"scheduled"`` (pending,
        not yet due) or ``"retrying"`` (pending after a failed attempt). With
        ``payloads=False`` payloads and results are not read (they come back as None):
        cheaper for listings that do not show them. With ``prefix``, ``queue`` and ``kind``
        match names that start with them; ``search``: words each found (in any case) in
        the kind, queue, worker or error, or equal to the id; ``key``: the jobs of that
        concurrency key; ``newest``: only the newest that many jobs (by id) are looked at,
        which bounds what a search reads."""
        where = job_filter(status, queue, kind, worker, error_contains, limit=limit,
                           offset=offset, payloads=payloads, prefix=prefix, search=search,
                           key=key, newest=newest)
        return self.store.job_list(where, self.clock.now())

    def attempts(self, job_id: int) -> builtins.list[Attempt]:
        """Every attempt of the job, oldest first, including the one running now."""
        check_int("job id", job_id)
        return self.store.job_attempts(job_id)

    def stats(self, *, window: float = 3600.0) -> Stats:
        """Counts by status and queue, and queue lag. Finished counts cover ``window`` s."""
        check_seconds("window", window)
        return self.store.stats(self.clock.now(), window)

    def count(self, status: str | None = None, queue: str | None = None, kind: str | None = None,
              *, worker: str | None = None, error_contains: str | None = None,
              prefix: bool = False, search: Sequence[str] = (), key: str | None = None,
              newest: int | None = None) -> int:
        """How many jobs ``list`` would return with these filters and no limit."""
        where = job_filter(status, queue, kind, worker, error_contains, prefix=prefix,
                           search=search, key=key, newest=newest)
        return self.store.job_count(where, self.clock.now())

    def throughput(self, *, span: float = 300.0, bucket: float = 10.0) -> Throughput:
        """Succeeded and dead jobs and failed attempts per ``bucket`` seconds over the last
        ``span`` seconds. Buckets are aligned to multiples of ``bucket`` so that a full
        bucket's count does not jitter from one call to the next; the last one is filling."""
        check_buckets(span, bucket)
        buckets = math.ceil(span / bucket)
        end = (math.floor(self.clock.now() / bucket) + 1) * bucket
        return self.store.job_throughput(end - buckets * bucket, bucket, buckets)

    def dead_groups(self, *, queue: str | None = None, kind: str | None = None,
                    error_contains: str | None = None, limit: int = 100,
                    prefix: bool = False, search: Sequence[str] = (),
                    key: str | None = None) -> builtins.list[ErrorGroup]:
        """Dead jobs grouped by kind and error line (``error_groups.group_key``), largest
        first: one bad deploy is one group with a count. Filters as ``list``'s."""
        return self.store.job_dead_groups(job_filter(
            JobStatus.DEAD, queue, kind, None, error_contains, limit=limit, prefix=prefix,
            search=search, key=key))

    # -- administering --------------------------------------------------------------------

    def retry(self, job_id: int, *, force: bool = False) -> None:
        """A dead or cancelled job back to pending, runnable now, with a fresh allowance of
        attempts. With ``force``, a running job too: for one stuck under a worker that will
        never finish it; the old holder is fenced out (its token is dropped), and if it is
        alive after all, its handler may still be running. Raises ``JobNotFound`` or
        ``InvalidState``."""
        check_int("job id", job_id)
        self.store.job_retry(job_id, self.clock.now(), force)

    def retry_dead(self, *, queue: str | None = None, kind: str | None = None,
                   error_contains: str | None = None, prefix: bool = False,
                   search: Sequence[str] = ()) -> int:
        """Retry every dead job matching the filters (as ``list``'s); returns how many."""
        where = job_filter(JobStatus.DEAD, queue, kind, None, error_contains, prefix=prefix,
                           search=search)
        return self.store.job_retry_dead(where, self.clock.now())

    def cancel(self, job_id: int, *, terminate: bool = False) -> JobStatus:
        """A pending job is cancelled at once (returns ``cancelled``). A running one is
        flagged: its worker tells the handler within a second (returns ``running``). With
        ``terminate``, a running one is cancelled now too, its attempt recorded, and its
        worker stops the run (the workers guide says how; a thread cannot be stopped)."""
        check_int("job id", job_id)
        return JobStatus(self.store.job_cancel(job_id, self.clock.now(), bool(terminate)))

    def prune(self, older_than: float, *, dead: bool = True) -> int:
        """Delete jobs that finished more than ``older_than`` seconds ago, and their history;
        dead ones only with ``dead``. Never pending or running ones. Returns how many."""
        return sum(self.prune_by_status(older_than, dead=dead).values())

    def prune_by_status(self, older_than: float, *, dead: bool = True,
                        dry_run: bool = False) -> dict[str, int]:
        """``prune``, saying how many jobs of each status (succeeded, dead, cancelled) it
        deleted, or with ``dry_run`` would delete, deleting nothing. Every status it may
        delete is a key, with 0 when none."""
        check_seconds("older_than", older_than)
        statuses = [s for s in FINISHED_STATUSES if dead or s != JobStatus.DEAD]
        counts = self.store.job_prune(self.clock.now() - older_than, statuses, dry_run)
        return {s: counts.get(s, 0) for s in statuses}

    # -- queue controls -------------------------------------------------------------------

    def pause(self, queue: str) -> None:
        """No worker claims from ``queue`` until ``resume``: every worker, on every host,
        from its next claim on. Running jobs finish normally; enqueue still works. The
        pause lives in the database, so it survives restarts."""
        check_name("queue", queue)
        self.store.queue_pause(queue, True, self.clock.now())

    def resume(self, queue: str) -> None:
        """Undo ``pause``: workers claim from ``queue`` again."""
        check_name("queue", queue)
        self.store.queue_pause(queue, False, self.clock.now())

    def set_limit(self, queue: str, *, concurrency: int | None = None,
                  rate: str | Rate | None = None, key_concurrency: int | None = None,
                  ordered: bool = False) -> None:
        """Set ``queue``'s limits, across all workers: ``concurrency`` (at most this many of
        its jobs running at once), ``rate`` (at most N jobs started per second, minute or
        hour: ``"5/s"``, ``"100/m"``, ``"1000/h"`` or a ``Rate``), ``key_concurrency`` (at
        most this many running jobs per key, ``enqueue(key=...)``) and ``ordered`` (jobs of
        one key run one at a time, in enqueue order: a job waits until every earlier job of
        its key has ended). The call sets the whole set: a limit given as None (``ordered``
        False) is removed, so ``set_limit(queue)`` removes them all. Jobs without a key
        and other queues are never held back by key limits. Limits declared in code
        (``Registry.queue``) are checked by the same rules, and set by the workers
        (``declare_limits``)."""
        limits = check_limits(queue, concurrency, rate, key_concurrency, ordered)
        self.store.queue_set_limit(queue, limits.concurrency, limits.rate, self.clock.now(),
                                   limits.key_concurrency, limits.ordered)

    def queues(self) -> dict[str, QueueStats]:
        """Every queue with pending, running or dead jobs, or with controls: counts
        (pending, running, dead), whether it is paused, and its limits."""
        return self.stats(window=1.0).queues

    # -- misc -----------------------------------------------------------------------------

    @property
    def frozen(self) -> bool:
        """True when the store could only open a fixed copy of the data (SQLite: a WAL
        database read-only in a directory it cannot write): later changes will not show."""
        return self.store.frozen

    def describe(self) -> dict[str, str | None]:
        """What the store runs on, for reports: ``{"store": "sqlite", "sqlite": "3.40.1",
        "filesystem": "ext4", ...}``."""
        return self.store.describe()

    def watch(self) -> Watch:
        """A change signal: ``wait(timeout)`` returns True as soon as another connection
        may have committed (see ``types.Watch``). Close it when done."""
        return self.store.watch()

    def write_blockers(self) -> builtins.list[str]:
        """Processes holding the write lock while stopped, described for people (see
        ``store.base.Store.write_blockers``)."""
        return self.store.write_blockers()

    def check(self, *, wait: float = 0.0) -> None:
        """Raise ``DatabaseUnavailable`` when the database opened is gone or was replaced
        (``store.base.Store.check``); on PostgreSQL, connect now if not yet (tables checked,
        created or migrated), trying again for up to ``wait`` seconds while the server does
        not answer (``DatabaseUnreachable``: a worker started beside its database)."""
        check_seconds("wait", wait)
        reach(self.store.check, wait)

    def close(self) -> None:
        stop_waiting(self)
        self.store.close()

    def __enter__(self) -> Queue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Queue({self.database!r})"


def _ours(job: Job | None, job_id: int, token: int) -> Job:
    """The job a fenced write returned; ``LeaseLost`` when it wrote nothing (None)."""
    if job is None:
        raise LeaseLost(job_id, token)
    return job
