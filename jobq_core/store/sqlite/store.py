"""The SQLite store: jobq's job operations on one WAL-mode database file.

Concurrency model: any number of processes may open the same file. Each ``SqliteStore``
owns one connection, guarded by a lock so that threads of one process may share it.
Writers are serialised by SQLite itself; every multi-statement write runs inside
``write_transaction`` (``BEGIN IMMEDIATE``). A single write statement in autocommit mode
takes the write lock when it starts, so it needs no explicit transaction.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from ...checks import INT64_MAX, MAX_LEASE, check_seconds
from ...error_groups import group_dead
from ...errors import (
    DatabaseError, DatabaseUnavailable, InvalidState, JobNotFound, JobqError, StorageFull,
    UnusableConnection,
)
from ...types import (
    Attempt, ErrorGroup, ExtendResult, Job, JobStatus, Outcome, QueueStats, Rate, ScheduleInfo,
    Stats, Throughput, WorkerInfo,
)
from ...textsafe import clean
from .. import statements as shared
from ..base import (
    FINISHED_STATUSES, TAKEN_BACK, Completion, ConnectionIdentity, CopiedJob, ListFilter,
    NewJob, RetryDelay, lease_expired,
)
from ..rows import (
    THROUGHPUT_FAILED, attempts_from_rows, controls_from_rows, stats_from_rows,
    throughput_from_rows, worker_children,
)
from . import app_connection
from . import statements as sql
from .connection import (
    SYNCHRONOUS_MODES, connect, error_code, filesystem_type, guarded, set_pragmas,
    stopped_lock_holders, translate, warn_if_network, write_transaction,
)
from .rows import JOB_COLS, JOB_COLS_LEAN, claimed_job, decode, job_from_row, unreadable
from .schema import SCHEMA_VERSION, installed_version, migrate, payload_is_big
from .watch import SqliteWatch, file_identity
from ..controls import ControlCache

log = logging.getLogger("jobq.store")

_BATCH = 1000  # rows per transaction for maintenance work, so writers never wait long


def _complete(c: sqlite3.Connection, completions: Sequence[Completion], now: float) -> list[bool]:
    """Per completion, whether it was accepted (False: fenced out)."""
    return [c.execute(sql.COMPLETE, (x.result, now, x.job_id, x.token)).rowcount == 1
            for x in completions]


def _claim_order(job: Job) -> tuple:
    return -job.priority, job.run_at, job.id


class SqliteStore:
    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "NORMAL",
        busy_timeout: float = 30.0,
        read_only: bool = False,
        create: bool = True,
    ):
        synchronous = str(synchronous).upper()
        if synchronous not in SYNCHRONOUS_MODES:
            raise ValueError(f"synchronous must be one of {SYNCHRONOUS_MODES}, got {synchronous!r}")
        check_seconds("busy_timeout", busy_timeout)
        self.path = os.fspath(path)
        self.synchronous = synchronous
        self.read_only = read_only
        self._pid = os.getpid()  # SQLite connections must not cross a fork
        self._lock = threading.RLock()
        self.frozen = False  # True: an immutable snapshot that cannot see later changes
        warn_if_network(self.path)
        self._conn = connect(self.path, busy_timeout, read_only, create and not read_only)
        try:
            try:
                version = installed_version(self._conn, self.path)
            except sqlite3.OperationalError as e:
                if not (read_only and error_code(e) == sqlite3.SQLITE_CANTOPEN):
                    raise
                # A WAL database in a directory we cannot write (no -shm to share): read
                # it as an immutable snapshot rather than not at all.
                self._conn.close()
                self._conn = connect(self.path, busy_timeout, read_only, False, immutable=True)
                self.frozen = True
                version = installed_version(self._conn, self.path)
            if version == 0 and (read_only or not create):
                # Only a store that may create a database puts jobq's tables in a file:
                # anything else leaves an application's file (or an empty one) untouched.
                raise DatabaseError(f"{self.path} is not a jobq database (it has no jobq "
                                    "tables; `jobq enqueue` or `jobq run` creates them)")
            if not read_only:
                set_pragmas(self._conn, self.path, synchronous)
                if version < SCHEMA_VERSION:
                    with write_transaction(self._conn):
                        migrate(self._conn)
            elif version < SCHEMA_VERSION:
                raise DatabaseError(f"{self.path} has an older jobq schema: open it once "
                                    "without read-only mode to upgrade it")
        except sqlite3.Error as e:
            self._conn.close()
            raise translate(e, self.path) from e
        except BaseException:
            self._conn.close()
            raise
        self._identity = file_identity(self.path)  # the file opened, for check()
        self._controls = ControlCache()

    # -- transactions -------------------------------------------------------------------

    def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return write_transaction(self._conn)

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One snapshot for several SELECTs, so counts agree with each other."""
        c = self._conn
        c.execute("BEGIN")
        try:
            yield c
        finally:
            if c.in_transaction:
                c.execute("COMMIT")

    # -- producing ----------------------------------------------------------------------

    @guarded
    def job_insert_many(self, jobs: Sequence[NewJob], now: float) -> list[int]:
        if len(jobs) == 1 and not _needs_care(jobs[0]):  # one statement: no BEGIN needed
            return [self._conn.execute(sql.INSERT, _insert_row(jobs[0], now)).lastrowid]
        ids: list[int] = []
        with self._write() as c:
            plain: list[tuple] = []
            for job in jobs:
                if not _needs_care(job):
                    plain.append(_insert_row(job, now))
                    continue
                ids += self._insert_plain(c, plain)
                plain = []
                ids.append(self._insert_one(c, job, now))
            ids += self._insert_plain(c, plain)
        return ids

    @staticmethod
    def _insert_plain(c: sqlite3.Connection, rows: list[tuple]) -> list[int]:
        if not rows:
            return []
        if len(rows) == 1:
            return [c.execute(sql.INSERT, rows[0]).lastrowid]
        # SQLite gives a new row max(id)+1, and a random unused id once the largest id is
        # taken (which another program may have written). Under the write lock, with room
        # below the largest id, the batch gets exactly the ids after the current maximum.
        top = c.execute("SELECT max(id) FROM jobq_jobs").fetchone()[0] or 0
        if top > INT64_MAX - len(rows):
            raise StorageFull(f"job ids are used up: the largest id is {top}, and SQLite would "
                            "give new jobs random ids that a pruned job may have had")
        c.executemany(sql.INSERT, rows)
        last = c.execute("SELECT last_insert_rowid()").fetchone()[0]
        if last != top + len(rows):  # cannot happen by SQLite's rowid rule; never guess ids
            raise JobqError(f"batch insert got ids up to {last}, expected {top + len(rows)}")
        return list(range(top + 1, last + 1))

    @staticmethod
    def _insert_one(c: sqlite3.Connection, job: NewJob, now: float) -> int:
        """A job with a unique key (which may exist already) or a big payload."""
        if job.unique_key is not None:
            row = c.execute(sql.LIVE_WITH_KEY, (job.unique_key,)).fetchone()
            if row:
                return row[0]
        if not payload_is_big(job.payload):
            return c.execute(sql.INSERT, _insert_row(job, now)).lastrowid
        job_id = c.execute(sql.INSERT, _insert_row(job._replace(payload=None), now)).lastrowid
        c.execute("INSERT INTO jobq_payloads(job_id, payload) VALUES (?, ?)", (job_id, job.payload))
        return job_id

    # -- on the application's connection (see app_connection.py) ------------------------

    def job_insert_many_on(self, conn: object, jobs: Sequence[NewJob], now: float) -> list[int]:
        self._check_app_connection(conn)
        return app_connection.insert_many(conn, jobs, now)

    def job_complete_on(self, conn: object, completion: Completion, now: float) -> bool:
        self._check_app_connection(conn)
        return app_connection.complete(conn, completion, now)

    def same_database(self, identity: ConnectionIdentity) -> bool:
        return identity.store == app_connection.STORE and identity.key == self._identity

    def _check_app_connection(self, conn: object) -> None:
        """Before any write on the caller's connection (no lock of this store's: the
        connection is the caller's, and so is its thread)."""
        identity = app_connection.identity(conn)
        if not self.same_database(identity):
            raise UnusableConnection(f"the connection given with conn= is to {identity.where}, "
                                     f"not to this queue's database {self.path}; nothing was "
                                     "written")

    # -- consuming ----------------------------------------------------------------------

    @guarded
    def job_claim(
        self, worker: str, queues: Sequence[str] | None, now: float, lease_until: float,
        limit: int, attempt_limits: Mapping[str, int] | None = None,
    ) -> list[Job]:
        return self._claim(self._conn, worker, queues, now, lease_until, limit, attempt_limits)

    @guarded
    def job_next_run_at(self, queues: Sequence[str] | None, after: float) -> float | None:
        queues = list(dict.fromkeys(queues)) if queues else []
        found = self._conn.execute(shared.next_run_at_sql(shared.SQLITE, len(queues)),
                                   shared.next_run_at_params(queues, after)).fetchone()[0]
        # a run_at another program wrote as text sorts after every number: not a time
        return float(found) if isinstance(found, (int, float)) else None

    def _claim(self, c: sqlite3.Connection, worker: str, queues: Sequence[str] | None,
               now: float, lease_until: float, limit: int,
               attempt_limits: Mapping[str, int] | None = None) -> list[Job]:
        queues = list(dict.fromkeys(queues)) if queues else []
        limits = [v for kind_limit in (attempt_limits or {}).items() for v in kind_limit]
        per_queue = not queues and self._controls.get(self._read_controls).busy
        query = sql.claim_sql(len(queues), limit == 1, per_queue, len(limits) // 2)
        params = sql.claim_params(queues, now, limit, lease_until, worker, limits)
        jobs = [claimed_job(r, lease_until, worker, now) for r in c.execute(query, params).fetchall()]
        if not queues and not per_queue:
            self._controls.claimed(limit, len(jobs))
        if len(jobs) > 1:
            try:
                jobs.sort(key=_claim_order)  # RETURNING order is unspecified
            except TypeError:  # a column another program wrote: set those jobs aside
                jobs = _readable(c, jobs, now)
                jobs.sort(key=_claim_order)
        elif jobs and not (type(jobs[0].max_attempts) is type(jobs[0].priority) is int):
            jobs = _readable(c, jobs, now)
        return jobs

    @guarded
    def job_extend_many(
        self, leases: Iterable[tuple[int, int]], now: float, lease_until: float
    ) -> ExtendResult:
        leases = list(leases)
        lost, cancel = set(), set()
        if not leases:
            return ExtendResult(frozenset(), frozenset())
        with self._write() if len(leases) > 1 else _nothing(self._conn) as c:
            for job_id, token in leases:
                row = c.execute(sql.EXTEND, (lease_until, now, job_id, token)).fetchone()
                if row is None:
                    lost.add(job_id)
                elif row[0]:
                    cancel.add(job_id)
        return ExtendResult(frozenset(lost), frozenset(cancel))

    @guarded
    def job_complete_and_claim(
        self, completions: Sequence[Completion], now: float, worker: str,
        queues: Sequence[str] | None, lease_until: float, limit: int,
        attempt_limits: Mapping[str, int] | None = None,
    ) -> tuple[list[bool], list[Job]]:
        """Complete, then claim up to ``limit`` jobs, in one transaction: one commit (one
        fsync under synchronous=FULL) where a worker would otherwise make two."""
        with self._write() as c:
            accepted = _complete(c, completions, now)
            jobs = self._claim(c, worker, queues, now, lease_until, limit,
                               attempt_limits) if limit > 0 else []
        return accepted, jobs

    @guarded
    def job_complete_many(self, completions: Sequence[Completion], now: float) -> list[bool]:
        if len(completions) == 1:  # one statement: no BEGIN needed
            return _complete(self._conn, completions, now)
        with self._write() as c:
            return _complete(c, completions, now)

    @guarded
    def job_fail(
        self, job_id: int, token: int, error: str, now: float, retry_delay: RetryDelay
    ) -> Job | None:
        return self._fail(job_id, token, error, now, retry_delay, give_up=False)

    @guarded
    def job_give_up(self, job_id: int, token: int, error: str, now: float) -> Job | None:
        return self._fail(job_id, token, error, now, lambda _attempt: 0.0, give_up=True)

    def _fail(self, job_id: int, token: int, error: str, now: float, retry_delay: RetryDelay,
              give_up: bool) -> Job | None:
        """One transaction: record the failed attempt and move the job on. ``give_up`` ends
        it dead whatever attempts remain, without touching its stored allowance (a later
        ``retry`` still gets the full one)."""
        with self._write() as c:
            row = c.execute(sql.RUNNING_ROW, (job_id, token)).fetchone()
            if row is None:
                return None
            attempts, max_attempts, worker, started_at, cancel = row
            outcome = Outcome.CANCELLED if cancel else Outcome.FAILED
            _leave_running(c, job_id, token, attempts, attempts if give_up else max_attempts,
                           bool(cancel), now, retry_delay, error)
            c.execute(sql.RECORD_ATTEMPT, (job_id, attempts, worker, token, started_at, now,
                                        outcome, error))
            return job_from_row(c.execute(f"SELECT {JOB_COLS} FROM jobq_jobs WHERE id=?", (job_id,)).fetchone())

    @guarded
    def job_release(self, job_id: int, token: int, now: float) -> bool:
        with self._write() as c:
            row = c.execute(sql.RUNNING_ROW, (job_id, token)).fetchone()
            if row is None:
                return False
            attempts, _max_attempts, worker, started_at, cancel = row
            moved, outcome = shared.after_release(attempts, bool(cancel), now)
            c.execute(sql.LEAVE_RUNNING, (*moved, job_id, token))
            c.execute(sql.RECORD_ATTEMPT, (job_id, attempts, worker, token, started_at, now,
                                        outcome, None))
            return True

    @guarded
    def job_progress(
        self, job_id: int, token: int, fraction: float | None, message: str | None
    ) -> bool:
        return self._conn.execute(sql.PROGRESS, (fraction, message, job_id, token)).rowcount == 1

    @guarded
    def job_reap_expired(self, now: float, retry_delay: RetryDelay) -> int:
        rescued = 0
        while True:
            with self._write() as c:
                rows = c.execute(sql.EXPIRED_LEASES, (now, now + MAX_LEASE, _BATCH)).fetchall()
                for job_id, token, attempts, max_attempts, worker, started, lease, cancel in rows:
                    bad = unreadable(attempts=attempts, max_attempts=max_attempts)
                    if bad:
                        quarantine(c, job_id, token, bad, now)
                        continue
                    if type(lease) in (int, float) and lease < now:
                        error = lease_expired(lease, now)
                    else:
                        error = (f"running with a lease jobq never grants ({clean(repr(lease))}) "
                                 f"under worker {worker!r}: taken back by the reaper")
                    _leave_running(c, job_id, token, attempts, max_attempts, bool(cancel), now,
                                   retry_delay, error)
                    c.execute(sql.RECORD_ATTEMPT, (job_id, attempts, worker, token, started, now,
                                                Outcome.LEASE_EXPIRED, error))
            rescued += len(rows)
            if len(rows) < _BATCH:
                return rescued

    # -- reading ------------------------------------------------------------------------

    @guarded
    def job_get(self, job_id: int) -> Job | None:
        row = self._conn.execute(f"SELECT {JOB_COLS} FROM jobq_jobs WHERE id=?", (job_id,)).fetchone()
        return job_from_row(row) if row else None

    @guarded
    def job_list(self, where: ListFilter, now: float) -> list[Job]:
        query, params = shared.list_query(shared.SQLITE, where, now,
                                          JOB_COLS if where.payloads else JOB_COLS_LEAN)
        return [job_from_row(r) for r in self._conn.execute(query, params).fetchall()]

    @guarded
    def job_attempts(self, job_id: int) -> list[Attempt]:
        ended, current = shared.attempts_of(shared.SQLITE)
        with self._read() as c:
            rows = c.execute(ended, (job_id,)).fetchall()
            row = c.execute(current, (job_id,)).fetchone()
        return attempts_from_rows(job_id, rows, row)

    # -- administering ------------------------------------------------------------------

    @guarded
    def job_retry(self, job_id: int, now: float, force: bool = False) -> None:
        with self._write() as c:
            row = c.execute("SELECT status, attempts, worker, token, started_at FROM jobq_jobs "
                            "WHERE id=?", (job_id,)).fetchone()
            if row is None:
                raise JobNotFound(job_id)
            status, attempts, worker, token, started = row
            if force and status == JobStatus.RUNNING:
                c.execute(sql.RECORD_ATTEMPT, (job_id, attempts, worker, token, started, now,
                                               Outcome.LEASE_LOST, TAKEN_BACK))
            elif status not in (JobStatus.DEAD, JobStatus.CANCELLED):
                raise InvalidState(f"job {job_id} is {status}; only dead or cancelled jobs "
                                   "can be retried (a running one with force)")
            try:
                c.execute(sql.REVIVE + " WHERE id=?", (now, job_id))
            except sqlite3.IntegrityError:
                raise InvalidState(
                    f"job {job_id}: another pending or running job holds its unique key"
                ) from None

    @guarded
    def job_retry_dead(self, where: ListFilter, now: float) -> int:
        conds, params, _ = sql.list_conditions(shared.dead_filter(where), now)
        with self._write() as c:
            # OR IGNORE: a job whose unique key is live again elsewhere stays dead.
            query = sql.REVIVE.replace("UPDATE", "UPDATE OR IGNORE", 1) + " WHERE " + " AND ".join(conds)
            return c.execute(query, [now, *params]).rowcount

    @guarded
    def job_cancel(self, job_id: int, now: float) -> str:
        with self._write() as c:
            row = c.execute("SELECT status FROM jobq_jobs WHERE id=?", (job_id,)).fetchone()
            if row is None:
                raise JobNotFound(job_id)
            if row[0] == JobStatus.PENDING:
                c.execute(
                    "UPDATE jobq_jobs SET status='cancelled', finished_at=? WHERE id=?", (now, job_id)
                )
                return JobStatus.CANCELLED
            if row[0] == JobStatus.RUNNING:
                c.execute("UPDATE jobq_jobs SET cancel_requested=1 WHERE id=?", (job_id,))
                return JobStatus.RUNNING
            raise InvalidState(f"job {job_id} is already {row[0]}")

    @guarded
    def job_copy_in(self, jobs: Sequence[CopiedJob]) -> list[int]:
        ids = []
        with self._write() as c:
            for copied in jobs:
                job = copied.job
                if copied.status == JobStatus.PENDING and job.unique_key is not None:
                    row = c.execute("SELECT id FROM jobq_jobs WHERE unique_key=? AND status IN "
                                    "('pending','running')", (job.unique_key,)).fetchone()
                    if row:  # a live job here holds its key (we hold the write lock)
                        ids.append(row[0])
                        continue
                job_id = self._insert_one(c, job._replace(unique_key=None), copied.created_at)
                c.execute("UPDATE jobq_jobs SET status=?, attempts=?, error=?, finished_at=?, "
                          "unique_key=? WHERE id=?",
                          (str(copied.status), copied.attempts, copied.error,
                           copied.finished_at, job.unique_key, job_id))
                ids.append(job_id)
        return ids

    @guarded
    def job_prune(self, finished_before: float, statuses: Sequence[str] = FINISHED_STATUSES,
                  dry_run: bool = False) -> dict[str, int]:
        statuses = [str(s) for s in statuses]
        marks = ",".join("?" * len(statuses))
        # The newest job is never pruned: new ids are max(id)+1, so keeping it means an id
        # is never handed out twice (cheaper than AUTOINCREMENT's extra write).
        where = (f"status IN ({marks}) AND finished_at<? "
                 "AND id<(SELECT max(id) FROM jobq_jobs)")
        params = [*statuses, finished_before]
        if dry_run:
            return dict(self._conn.execute(
                f"SELECT status, count(*) FROM jobq_jobs WHERE {where} GROUP BY status",
                params).fetchall())
        pruned: dict[str, int] = {}
        while True:
            with self._write() as c:
                rows = c.execute(f"SELECT id, status FROM jobq_jobs WHERE {where} LIMIT ?",
                                 (*params, _BATCH)).fetchall()
                if rows:
                    batch = json.dumps([r[0] for r in rows])
                    c.execute("DELETE FROM jobq_attempts WHERE job_id IN "
                              "(SELECT value FROM json_each(?))", (batch,))
                    c.execute("DELETE FROM jobq_payloads WHERE job_id IN "
                              "(SELECT value FROM json_each(?))", (batch,))
                    c.execute("DELETE FROM jobq_jobs WHERE id IN (SELECT value FROM json_each(?))",
                              (batch,))
            for _, status in rows:
                pruned[status] = pruned.get(status, 0) + 1
            if len(rows) < _BATCH:
                return pruned

    @guarded
    def job_count(self, where: ListFilter, now: float) -> int:
        query, params = shared.count_query(shared.SQLITE, where, now)
        return self._conn.execute(query, params).fetchone()[0]

    @guarded
    def job_throughput(self, start: float, bucket: float, buckets: int) -> Throughput:
        end = start + bucket * buckets
        with self._read() as c:
            rows = c.execute(
                "SELECT status, CAST((finished_at - ?) / ? AS INTEGER), count(*) FROM jobq_jobs "
                "WHERE status IN ('succeeded','dead') AND finished_at>=? AND finished_at<? "
                "GROUP BY 1, 2",
                (start, bucket, start, end),
            ).fetchall()
            rows += c.execute(
                "SELECT 'failed', CAST((ended_at - ?) / ? AS INTEGER), count(*) FROM jobq_attempts "
                "WHERE ended_at>=? AND ended_at<? AND outcome IN (?, ?, ?) GROUP BY 2",
                (start, bucket, start, end, *THROUGHPUT_FAILED),
            ).fetchall()
        return throughput_from_rows(start, bucket, buckets, rows)

    @guarded
    def job_dead_groups(self, where: ListFilter) -> list[ErrorGroup]:
        conds, params, _ = sql.list_conditions(shared.dead_filter(where), 0.0)
        # SQL groups by first line and the error's tail (where a traceback's exception
        # line is); Python then merges groups whose error lines fold alike (group_key).
        rows = self._conn.execute(
            "SELECT kind, substr(coalesce(error, ''), 1, "
            "instr(coalesce(error, '') || char(10), char(10)) - 1), "
            "substr(coalesce(error, ''), -300), count(*), max(finished_at), max(id), "
            "json_group_array(DISTINCT queue) FROM jobq_jobs "
            f"WHERE {' AND '.join(conds)} AND finished_at IS NOT NULL GROUP BY 1, 2, 3",
            params,
        ).fetchall()
        return group_dead(((kind, f"{first}\n{tail}", n, finished, last_id, json.loads(queues))
                           for kind, first, tail, n, finished, last_id, queues in rows),
                          where.limit)

    @guarded
    def stats(self, now: float, window: float) -> Stats:
        return _stats(self, now, window)

    # -- queue controls and schedules ------------------------------------------------------

    @guarded
    def queue_pause(self, queue: str, paused: bool, now: float) -> None:
        with self._write() as c:
            c.execute(sql.PAUSE, (queue, int(paused), now))
            c.execute(sql.DROP_UNCONTROLLED, (queue,))
        self._controls.forget()

    @guarded
    def queue_set_limit(self, queue: str, concurrency: int | None, rate: Rate | None,
                        now: float) -> None:
        with self._write() as c:
            c.execute(sql.SET_LIMIT, (queue, concurrency, rate and rate.limit,
                                      rate and rate.per, now))
            c.execute(sql.DROP_UNCONTROLLED, (queue,))
        self._controls.forget()

    def _read_controls(self) -> list[tuple[str, bool, bool]]:
        return self._conn.execute(sql.CONTROL_STATE).fetchall()

    @guarded
    def queue_controls(self) -> dict[str, QueueStats]:
        return controls_from_rows(self._conn.execute(sql.QUEUE_CONTROLS).fetchall())

    @guarded
    def schedule_register(self, schedule: ScheduleInfo) -> None:
        s = schedule
        self._conn.execute(sql.SCHEDULE_REGISTER, (s.key, s.kind, s.queue, s.every, s.cron,
                                                   s.tz, s.last_tick, s.updated_at))

    @guarded
    def schedule_tick(self, key: str, tick: float, job: NewJob, now: float) -> int | None:
        with self._write() as c:
            if c.execute(sql.SCHEDULE_TICK, (tick, now, key, tick)).rowcount != 1:
                return None
            job_id = self._insert_one(c, job, now)
            c.execute(sql.SCHEDULE_JOB, (job_id, key))
            return job_id

    @guarded
    def schedule_forget(self, key: str) -> bool:
        return self._conn.execute(sql.SCHEDULE_FORGET, (key,)).rowcount == 1

    @guarded
    def schedule_list(self) -> list[ScheduleInfo]:
        return [ScheduleInfo(*r) for r in self._conn.execute(sql.SCHEDULES)]

    # -- workers ------------------------------------------------------------------------

    @guarded
    def worker_register(self, info: WorkerInfo) -> None:
        queues = None if info.queues is None else json.dumps(list(info.queues))
        self._conn.execute(
            "INSERT OR REPLACE INTO jobq_workers(id, host, pid, queues, concurrency, started_at, "
            "last_seen, busy, beat_interval, lease, pool, children) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (info.id, info.host, info.pid, queues, info.concurrency, info.started_at,
             info.last_seen, info.busy, info.beat_interval, info.lease, info.pool,
             None if info.children is None else json.dumps(info.children)),
        )

    @guarded
    def worker_beat(self, worker_id: str, now: float, busy: int,
                    children: Sequence[tuple[int, str, int | None]] | None = None) -> bool:
        if children is None:
            return self._conn.execute(
                "UPDATE jobq_workers SET last_seen=?, busy=? WHERE id=?", (now, busy, worker_id)
            ).rowcount > 0
        return self._conn.execute(
            "UPDATE jobq_workers SET last_seen=?, busy=?, children=? WHERE id=?",
            (now, busy, json.dumps(children), worker_id)).rowcount > 0

    @guarded
    def worker_deregister(self, worker_id: str) -> None:
        self._conn.execute("DELETE FROM jobq_workers WHERE id=?", (worker_id,))

    @guarded
    def worker_forget(self, seen: Sequence[tuple[str, float]]) -> int:
        with self._write() as c:
            return sum(c.execute("DELETE FROM jobq_workers WHERE id=? AND last_seen=?",
                                 item).rowcount for item in seen)

    @guarded
    def worker_list(self) -> list[WorkerInfo]:
        rows = self._conn.execute(
            "SELECT id, host, pid, queues, concurrency, started_at, last_seen, busy, "
            "beat_interval, lease, pool, children FROM jobq_workers ORDER BY id"
        ).fetchall()
        return [
            WorkerInfo(r[0], r[1], r[2], _worker_queues(r[3]), r[4], r[5], r[6], r[7], r[8], r[9],
                       r[10], worker_children(decode(r[11])))
            for r in rows
        ]

    # -- misc ---------------------------------------------------------------------------

    def server_clock(self) -> None:
        return None  # one machine: its own clock is the one

    def describe(self) -> dict[str, str | None]:
        return {"store": "sqlite", "sqlite": sqlite3.sqlite_version, "path": self.path,
                "filesystem": filesystem_type(self.path), "synchronous": self.synchronous}

    def watch(self, *, poll_interval: float = 0.02) -> SqliteWatch:
        """A change signal: inotify on the database's files where the OS has it, confirmed
        by ``PRAGMA data_version``; where it has not, ``data_version`` polled every
        ``poll_interval`` seconds. Commits through this store's own connection do not count."""
        return SqliteWatch(self, poll_interval)

    def write_blockers(self) -> list[str]:
        return stopped_lock_holders(self.path)

    def check(self) -> None:
        try:
            same = file_identity(self.path) == self._identity
        except FileNotFoundError:
            raise DatabaseUnavailable(f"{self.path}: the database file is gone") from None
        if not same:
            raise DatabaseUnavailable(f"{self.path}: the database file was replaced")

    @guarded
    def data_version(self) -> int:
        """Changes whenever another connection commits (``SqliteWatch`` reads it)."""
        return self._conn.execute("PRAGMA data_version").fetchone()[0]

    @guarded
    def integrity_check(self) -> str:
        return "; ".join(r[0] for r in self._conn.execute("PRAGMA integrity_check"))

    @guarded
    def explain_claim(self, queues: Sequence[str] | None = None, limit: int = 1) -> list[str]:
        """The query plan of the claim statement (tests assert it uses the partial index)."""
        queues = list(queues or [])
        per_queue = not queues and self._controls.get(self._read_controls).busy
        query = "EXPLAIN QUERY PLAN " + sql.claim_sql(len(queues), limit == 1, per_queue)
        params = sql.claim_params(queues, 0.0, limit, 0.0, "w")
        return [r[3] for r in self._conn.execute(query, params)]

    def close(self) -> None:
        with self._lock:
            self._conn.close()


@contextmanager
def _nothing(c: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    yield c


def _needs_care(job: NewJob) -> bool:
    return job.unique_key is not None or payload_is_big(job.payload)


def _insert_row(job: NewJob, now: float) -> tuple:
    return (*job, now)  # NewJob's fields are in sql.INSERT's column order


def _worker_queues(text: str | None) -> tuple[str, ...] | None:
    """The registry's JSON list of queue names; anything else (another program wrote it)
    is shown as the one raw string it is."""
    if text is None:
        return None
    value = decode(text)
    if isinstance(value, list) and all(isinstance(q, str) for q in value):
        return tuple(value)
    return (f"{text!r:.60} (not a list of queue names)",)


def quarantine(c: sqlite3.Connection, job_id: int, token: int, bad: str, now: float) -> None:
    """Move a running job jobq cannot read to dead, saying why; the row keeps its values."""
    error = f"jobq cannot run this job: {bad} (written by another program?)"
    c.execute(sql.QUARANTINE, (error, now, job_id, token))
    log.warning("job %s set aside as dead: %s", job_id, bad)


def _readable(c: sqlite3.Connection, jobs: list[Job], now: float) -> list[Job]:
    """The claimed jobs jobq can run; the others go dead, each with an error naming the
    column it cannot read (the claim's token fences the move)."""
    ok = []
    for job in jobs:
        bad = unreadable(priority=job.priority, run_at=job.run_at, attempts=job.attempts,
                         max_attempts=job.max_attempts)
        if bad and c.in_transaction:  # complete_and_claim: inside its transaction
            quarantine(c, job.id, job.token, bad, now)
        elif bad:
            with write_transaction(c):
                quarantine(c, job.id, job.token, bad, now)
        else:
            ok.append(job)
    return ok


def _leave_running(
    c: sqlite3.Connection, job_id: int, token: int, attempts: int, max_attempts: int,
    cancel: bool, now: float, retry_delay: RetryDelay, error: str,
) -> None:
    """Move a failed or expired attempt's job on: cancelled, dead, or pending after backoff."""
    c.execute(sql.LEAVE_RUNNING, shared.leave_running_params(
        job_id, token, attempts, max_attempts, cancel, now, retry_delay, error))



def _stats(store: SqliteStore, now: float, window: float) -> Stats:
    with store._read() as c:
        rows = (c.execute(sql.PENDING_BY_QUEUE, (now, now)).fetchall(),
                c.execute(sql.RUNNING_BY_QUEUE, (now,)).fetchall(),
                c.execute(sql.DEAD_BY_QUEUE).fetchall(),
                dict(c.execute(sql.RECENT_FINISHED, (now - window,)).fetchall()),
                c.execute(sql.QUEUE_CONTROLS).fetchall())
    return stats_from_rows(now, window, *rows)


# -- opening ----------------------------------------------------------------------------
