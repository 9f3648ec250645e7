"""The SQLite store: jobq's job operations on one WAL-mode database file.

Concurrency model: any number of processes may open the same file. Each ``SqliteStore``
owns one connection, guarded by a lock so that threads of one process may share it.
Writers are serialised by SQLite itself; every multi-statement write runs inside
``BEGIN IMMEDIATE`` (a deferred transaction that reads first and writes later can fail
with SQLITE_BUSY at once, whatever the busy timeout). A single write statement in
autocommit mode takes the write lock when it starts, so it needs no explicit transaction.
"""
from __future__ import annotations

import functools
import json
import os
import re
import sqlite3
import threading
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from ..errors import (
    DatabaseError,
    DatabaseUnavailable,
    ForeignTable,
    InvalidState,
    JobNotFound,
    JobqError,
    NetworkFilesystemWarning,
    NotADatabase,
    SchemaTooNew,
    StorageFull,
)
from ..textsafe import error_line
from ..types import Attempt, Job, JobStatus, Outcome, QueueStats, Stats, WorkerInfo
from .base import (
    Completion, ErrorGroup, ExtendResult, ListFilter, NewJob, RetryDelay, Throughput,
)
from .sqlite_rows import JOB_COLS as _JOB_COLS
from .sqlite_rows import JOB_COLS_LEAN as _JOB_COLS_LEAN
from .sqlite_rows import CLAIM_RETURNING, claimed_job
from .sqlite_rows import job as _job
from .sqlite_rows import text as _text
from .sqlite_schema import (
    APP_ID, INLINE_PAYLOAD_MAX, MIGRATIONS, PAGE_SIZE, SCHEMA_VERSION, TABLES,
)

SYNCHRONOUS_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
_BATCH = 1000  # rows per transaction for maintenance work, so writers never wait long
WAL_CHECKPOINT_BYTES = 4 * 1024 * 1024  # WAL written between automatic checkpoints

_INSERT = (
    "INSERT INTO jobq_jobs(kind, payload, queue, priority, run_at, max_attempts, unique_key, "
    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_COMPLETE = (
    "UPDATE jobq_jobs SET status='succeeded', result=?, finished_at=?, lease_until=NULL, "
    "cancel_requested=0 WHERE id=? AND status='running' AND token=?"
)
_EXTEND = (
    "UPDATE jobq_jobs SET lease_until=?, heartbeat_at=? "
    "WHERE id=? AND status='running' AND token=? RETURNING cancel_requested"
)
_RECORD_ATTEMPT = (
    "INSERT INTO jobq_attempts(job_id, attempt, worker, token, started_at, ended_at, outcome, "
    "error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
# Status a job leaves "running" for, with the columns every such move resets.
_LEAVE_RUNNING = (
    "UPDATE jobq_jobs SET status=?, run_at=?, attempts=?, error=coalesce(?, error), "
    "finished_at=?, lease_until=NULL, token=NULL, heartbeat_at=NULL, cancel_requested=0 "
    "WHERE id=? AND status='running' AND token=?"
)
_ORDER_PENDING = "ORDER BY priority DESC, run_at, id"

# Reads that must stay cheap however many finished jobs pile up (tests check their plans).
EXPIRED_LEASES = (
    "SELECT id, token, attempts, max_attempts, worker, started_at, lease_until, "
    "cancel_requested FROM jobq_jobs WHERE status='running' AND lease_until<? LIMIT ?"
)
PENDING_BY_QUEUE = (
    "SELECT queue, count(*), sum(run_at>?), sum(attempts>0), "
    "min(CASE WHEN run_at<=? THEN run_at END) "
    "FROM jobq_jobs WHERE status='pending' GROUP BY queue"
)
RUNNING_BY_QUEUE = (
    "SELECT queue, count(*), sum(lease_until<?) FROM jobq_jobs WHERE status='running' "
    "GROUP BY queue"
)
DEAD_BY_QUEUE = "SELECT queue, count(*) FROM jobq_jobs WHERE status='dead' GROUP BY queue"
RECENT_FINISHED = (
    "SELECT status, count(*) FROM jobq_jobs WHERE status IN "
    "('succeeded','dead','cancelled') AND finished_at>=? GROUP BY status"
)




@functools.lru_cache(maxsize=64)
def _claim_sql(n_queues: int, single: bool) -> str:
    """The claim statement. Its shape depends only on how many queues are named, never on
    data: queue names are bound parameters. One queue is a seek on the per-queue index;
    several are merged from one bounded scan each, so no claim sorts the whole backlog."""
    if n_queues == 0:
        pick = f"SELECT id FROM jobq_jobs WHERE status='pending' AND run_at<=? {_ORDER_PENDING} LIMIT ?"
    elif n_queues == 1:
        pick = (
            "SELECT id FROM jobq_jobs WHERE status='pending' AND queue=? AND run_at<=? "
            f"{_ORDER_PENDING} LIMIT ?"
        )
    else:
        arm = (
            "SELECT * FROM (SELECT id, priority, run_at FROM jobq_jobs WHERE status='pending' "
            f"AND queue=? AND run_at<=? {_ORDER_PENDING} LIMIT ?)"
        )
        pick = f"SELECT id FROM ({' UNION ALL '.join([arm] * n_queues)}) {_ORDER_PENDING} LIMIT ?"
    match = f"id=({pick})" if single else f"id IN ({pick})"
    return (
        "UPDATE jobq_jobs SET status='running', attempts=attempts+1, lease_until=?, worker=?, "
        "token=random(), started_at=?, heartbeat_at=?, progress=NULL, progress_message=NULL "
        f"WHERE {match} RETURNING {CLAIM_RETURNING}"
    )


def _complete(c: sqlite3.Connection, completions: Sequence[Completion], now: float) -> list[bool]:
    """Per completion, whether it was accepted (False: fenced out)."""
    return [c.execute(_COMPLETE, (x.result, now, x.job_id, x.token)).rowcount == 1
            for x in completions]


def _claim_order(job: Job) -> tuple:
    return -job.priority, job.run_at, job.id


def _claim_params(queues: Sequence[str], now: float, limit: int) -> list:
    if len(queues) <= 1:
        return [*queues, now, limit]
    params: list = []
    for q in queues:
        params += [q, now, limit]
    return [*params, limit]


_WRITE_FAILED = frozenset(getattr(sqlite3, name, -1) for name in (
    "SQLITE_IOERR_WRITE", "SQLITE_IOERR_TRUNCATE",
    "SQLITE_IOERR_SHMSIZE"))


def _translate(e: sqlite3.Error, path: str) -> JobqError:
    extended = getattr(e, "sqlite_errorcode", None) or 0
    code = _code(e)
    if code == sqlite3.SQLITE_FULL:
        return StorageFull(f"{path}: the disk or file size limit is full ({e})")
    if extended in _WRITE_FAILED:  # EFBIG and most ENOSPC paths surface as these
        return StorageFull(f"{path}: writing failed: the disk is full or the file size limit "
                           f"was reached ({e})")
    if code in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
        return NotADatabase(f"{path} is not an SQLite database, or it is corrupt ({e})")
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return DatabaseUnavailable(f"{path}: the database stayed locked past the busy timeout ({e})")
    if code == sqlite3.SQLITE_CANTOPEN:
        return DatabaseUnavailable(f"{path}: cannot open the database file (is it or its "
                                   f"directory read-only, or did it vanish?) ({e})")
    if code == sqlite3.SQLITE_READONLY:
        return DatabaseUnavailable(f"{path}: the database is read-only here ({e})")
    return DatabaseUnavailable(f"{path}: {e}")


_forks = [0]  # how many times this process's line of ancestors forked


def _count_fork() -> None:
    _forks[0] += 1


os.register_at_fork(after_in_child=_count_fork)


def _guarded(method):
    """Run a store method under the connection lock, turning sqlite3 errors into jobq's."""

    @functools.wraps(method)
    def wrapper(self: SqliteStore, *args, **kwargs):
        if self._forks != _forks[0]:  # cheaper than comparing os.getpid() on every call
            raise DatabaseUnavailable(
                f"{self.path}: this Queue was opened before a fork; using its connection in "
                "the child could corrupt the database: open a new Queue in each process")
        with self._lock:
            try:
                return method(self, *args, **kwargs)
            except sqlite3.Error as e:
                raise _translate(e, self.path) from e

    return wrapper


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
        if not busy_timeout >= 0:
            raise ValueError(f"busy_timeout must be >= 0 seconds, got {busy_timeout!r}")
        self.path = os.fspath(path)
        self.read_only = read_only
        self._forks = _forks[0]  # SQLite connections must not cross a fork
        self._lock = threading.RLock()
        self.snapshot = False  # True: a read-only view that cannot see later changes
        _warn_if_network(self.path)
        self._conn = _connect(self.path, busy_timeout, read_only, create and not read_only)
        try:
            try:
                version = _installed_version(self._conn, self.path)
            except sqlite3.OperationalError as e:
                if not (read_only and _code(e) == sqlite3.SQLITE_CANTOPEN):
                    raise
                # A WAL database in a directory we cannot write (no -shm to share): read
                # it as an immutable snapshot rather than not at all.
                self._conn.close()
                self._conn = _connect(self.path, busy_timeout, read_only, False, immutable=True)
                self.snapshot = True
                version = _installed_version(self._conn, self.path)
            if not read_only:
                _set_pragmas(self._conn, self.path, synchronous)
                if version < SCHEMA_VERSION:
                    _migrate(self._conn)
            elif version < SCHEMA_VERSION:
                raise DatabaseError(
                    f"{self.path} is not a jobq database (or needs an upgrade: open it once "
                    "without read-only mode)"
                )
        except sqlite3.Error as e:
            self._conn.close()
            raise _translate(e, self.path) from e
        except BaseException:
            self._conn.close()
            raise

    # -- transactions -------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        c = self._conn
        c.execute("BEGIN IMMEDIATE")
        try:
            yield c
            c.execute("COMMIT")
        except BaseException:
            if c.in_transaction:  # SQLite may already have rolled back (e.g. disk full)
                c.execute("ROLLBACK")
            raise

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

    @_guarded
    def job_insert_many(self, jobs: Sequence[NewJob], now: float) -> list[int]:
        if len(jobs) == 1 and not _needs_care(jobs[0]):  # one statement: no BEGIN needed
            return [self._conn.execute(_INSERT, _insert_row(jobs[0], now)).lastrowid]
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
            return [c.execute(_INSERT, rows[0]).lastrowid]
        c.executemany(_INSERT, rows)
        # We hold the write lock and each new id is max(id)+1: the batch got consecutive ids.
        last = c.execute("SELECT last_insert_rowid()").fetchone()[0]
        return list(range(last - len(rows) + 1, last + 1))

    @staticmethod
    def _insert_one(c: sqlite3.Connection, job: NewJob, now: float) -> int:
        """A job with a unique key (which may exist already) or a big payload."""
        if job.unique_key is not None:
            row = c.execute(
                "SELECT id FROM jobq_jobs WHERE unique_key=? AND status IN ('pending','running')",
                (job.unique_key,),
            ).fetchone()
            if row:
                return row[0]
        if not _is_big(job.payload):
            return c.execute(_INSERT, _insert_row(job, now)).lastrowid
        job_id = c.execute(_INSERT, _insert_row(job._replace(payload=None), now)).lastrowid
        c.execute("INSERT INTO jobq_payloads(job_id, payload) VALUES (?, ?)", (job_id, job.payload))
        return job_id

    # -- consuming ----------------------------------------------------------------------

    @_guarded
    def job_claim(
        self, worker: str, queues: Sequence[str] | None, now: float, lease_until: float, limit: int
    ) -> list[Job]:
        return self._claim(self._conn, worker, queues, now, lease_until, limit)

    @staticmethod
    def _claim(c: sqlite3.Connection, worker: str, queues: Sequence[str] | None, now: float,
               lease_until: float, limit: int) -> list[Job]:
        queues = list(dict.fromkeys(queues)) if queues else []
        sql = _claim_sql(len(queues), limit == 1)
        params = [lease_until, worker, now, now, *_claim_params(queues, now, limit)]
        jobs = [claimed_job(r, lease_until, worker, now) for r in c.execute(sql, params).fetchall()]
        if len(jobs) > 1:
            jobs.sort(key=_claim_order)  # RETURNING order is unspecified
        return jobs

    @_guarded
    def job_extend_many(
        self, leases: Iterable[tuple[int, int]], now: float, lease_until: float
    ) -> ExtendResult:
        leases = list(leases)
        lost, cancel = set(), set()
        if not leases:
            return ExtendResult(frozenset(), frozenset())
        with self._write() if len(leases) > 1 else _nothing(self._conn) as c:
            for job_id, token in leases:
                row = c.execute(_EXTEND, (lease_until, now, job_id, token)).fetchone()
                if row is None:
                    lost.add(job_id)
                elif row[0]:
                    cancel.add(job_id)
        return ExtendResult(frozenset(lost), frozenset(cancel))

    @_guarded
    def job_complete_and_claim(
        self, completions: Sequence[Completion], now: float, worker: str,
        queues: Sequence[str] | None, lease_until: float, limit: int,
    ) -> tuple[list[bool], list[Job]]:
        """Complete, then claim up to ``limit`` jobs, in one transaction: one commit (one
        fsync under synchronous=FULL) where a worker would otherwise make two."""
        with self._write() as c:
            accepted = _complete(c, completions, now)
            jobs = self._claim(c, worker, queues, now, lease_until, limit) if limit > 0 else []
        return accepted, jobs

    @_guarded
    def job_complete_many(self, completions: Sequence[Completion], now: float) -> list[bool]:
        if len(completions) == 1:  # one statement: no BEGIN needed
            return _complete(self._conn, completions, now)
        with self._write() as c:
            return _complete(c, completions, now)

    @_guarded
    def job_fail(
        self, job_id: int, token: int, error: str, now: float, retry_delay: RetryDelay
    ) -> Job | None:
        return self._fail(job_id, token, error, now, retry_delay, give_up=False)

    @_guarded
    def job_give_up(self, job_id: int, token: int, error: str, now: float) -> Job | None:
        return self._fail(job_id, token, error, now, lambda _attempt: 0.0, give_up=True)

    def _fail(self, job_id: int, token: int, error: str, now: float, retry_delay: RetryDelay,
              give_up: bool) -> Job | None:
        """One transaction: record the failed attempt and move the job on. ``give_up`` ends
        it dead whatever attempts remain, without touching its stored allowance (a later
        ``retry`` still gets the full one)."""
        with self._write() as c:
            row = c.execute(
                "SELECT attempts, max_attempts, worker, started_at, cancel_requested FROM jobq_jobs "
                "WHERE id=? AND status='running' AND token=?",
                (job_id, token),
            ).fetchone()
            if row is None:
                return None
            attempts, max_attempts, worker, started_at, cancel = row
            outcome = Outcome.CANCELLED if cancel else Outcome.FAILED
            _leave_running(c, job_id, token, attempts, attempts if give_up else max_attempts,
                           bool(cancel), now, retry_delay, error)
            c.execute(_RECORD_ATTEMPT, (job_id, attempts, worker, token, started_at, now,
                                        outcome, error))
            return _job(c.execute(f"SELECT {_JOB_COLS} FROM jobq_jobs WHERE id=?", (job_id,)).fetchone())

    @_guarded
    def job_release(self, job_id: int, token: int, now: float) -> bool:
        with self._write() as c:
            row = c.execute(
                "SELECT attempts, worker, started_at, cancel_requested FROM jobq_jobs "
                "WHERE id=? AND status='running' AND token=?",
                (job_id, token),
            ).fetchone()
            if row is None:
                return False
            attempts, worker, started_at, cancel = row
            if cancel:
                status, finished, outcome = JobStatus.CANCELLED, now, Outcome.CANCELLED
            else:
                status, finished, outcome = JobStatus.PENDING, None, Outcome.RELEASED
            c.execute(_LEAVE_RUNNING, (status, now, attempts - 1, None, finished, job_id, token))
            c.execute(_RECORD_ATTEMPT, (job_id, attempts, worker, token, started_at, now,
                                        outcome, None))
            return True

    @_guarded
    def job_progress(
        self, job_id: int, token: int, fraction: float | None, message: str | None
    ) -> bool:
        cur = self._conn.execute(
            "UPDATE jobq_jobs SET progress=?, progress_message=? "
            "WHERE id=? AND status='running' AND token=?",
            (fraction, message, job_id, token),
        )
        return cur.rowcount == 1

    @_guarded
    def job_rescue_expired(self, now: float, retry_delay: RetryDelay) -> int:
        rescued = 0
        while True:
            with self._write() as c:
                rows = c.execute(EXPIRED_LEASES, (now, _BATCH)).fetchall()
                for job_id, token, attempts, max_attempts, worker, started, lease, cancel in rows:
                    error = (f"lease expired at {lease:.3f} with no heartbeat from worker "
                             f"{worker!r}; the attempt counts as failed")
                    _leave_running(c, job_id, token, attempts, max_attempts, bool(cancel), now,
                                   retry_delay, error)
                    c.execute(_RECORD_ATTEMPT, (job_id, attempts, worker, token, started, now,
                                                Outcome.LEASE_EXPIRED, error))
            rescued += len(rows)
            if len(rows) < _BATCH:
                return rescued

    # -- reading ------------------------------------------------------------------------

    @_guarded
    def job_get(self, job_id: int) -> Job | None:
        row = self._conn.execute(f"SELECT {_JOB_COLS} FROM jobq_jobs WHERE id=?", (job_id,)).fetchone()
        return _job(row) if row else None

    @_guarded
    def job_list(self, where: ListFilter, now: float) -> list[Job]:
        conds, params, order = _list_conditions(where, now)
        sql = f"SELECT {_JOB_COLS if where.payloads else _JOB_COLS_LEAN} FROM jobq_jobs"
        if conds:
            sql += " WHERE " + " AND ".join(conds)
        sql += f" ORDER BY {order} LIMIT ? OFFSET ?"
        rows = self._conn.execute(sql, [*params, where.limit, where.offset]).fetchall()
        return [_job(r) for r in rows]

    @_guarded
    def job_attempts(self, job_id: int) -> list[Attempt]:
        with self._read() as c:
            rows = c.execute(
                "SELECT job_id, attempt, worker, token, started_at, ended_at, outcome, error "
                "FROM jobq_attempts WHERE job_id=? ORDER BY seq",
                (job_id,),
            ).fetchall()
            current = c.execute(
                "SELECT attempts, worker, token, started_at, finished_at, status FROM jobq_jobs "
                "WHERE id=? AND status IN ('running','succeeded')",
                (job_id,),
            ).fetchone()
        out = [Attempt(r[0], r[1], r[2], r[3], r[4], r[5], Outcome(r[6]), r[7]) for r in rows]
        if current:
            attempt, worker, token, started, finished, status = current
            outcome = Outcome.RUNNING if status == JobStatus.RUNNING else Outcome.SUCCEEDED
            out.append(Attempt(job_id, attempt, worker, token, started, finished, outcome, None))
        return out

    # -- administering ------------------------------------------------------------------

    @_guarded
    def job_retry(self, job_id: int, now: float) -> None:
        with self._write() as c:
            row = c.execute("SELECT status FROM jobq_jobs WHERE id=?", (job_id,)).fetchone()
            if row is None:
                raise JobNotFound(job_id)
            if row[0] not in (JobStatus.DEAD, JobStatus.CANCELLED):
                raise InvalidState(f"job {job_id} is {row[0]}; only dead or cancelled jobs can be retried")
            try:
                c.execute(_REVIVE + " WHERE id=?", (now, job_id))
            except sqlite3.IntegrityError:
                raise InvalidState(
                    f"job {job_id}: another pending or running job holds its unique key"
                ) from None

    @_guarded
    def job_retry_dead(self, where: ListFilter, now: float) -> int:
        conds, params, _ = _list_conditions(
            ListFilter(JobStatus.DEAD, where.queue, where.kind, where.worker, where.error_contains),
            now,
        )
        with self._write() as c:
            # OR IGNORE: a job whose unique key is live again elsewhere stays dead.
            sql = _REVIVE.replace("UPDATE", "UPDATE OR IGNORE", 1) + " WHERE " + " AND ".join(conds)
            return c.execute(sql, [now, *params]).rowcount

    @_guarded
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

    @_guarded
    def job_prune(self, finished_before: float) -> int:
        pruned = 0
        while True:
            with self._write() as c:
                # The newest job is never pruned: new ids are max(id)+1, so keeping it means
                # an id is never handed out twice (cheaper than AUTOINCREMENT's extra write).
                ids = [r[0] for r in c.execute(
                    "SELECT id FROM jobq_jobs WHERE status IN ('succeeded','dead','cancelled') "
                    "AND finished_at<? AND id<(SELECT max(id) FROM jobq_jobs) LIMIT ?",
                    (finished_before, _BATCH),
                )]
                if ids:
                    batch = json.dumps(ids)
                    c.execute("DELETE FROM jobq_attempts WHERE job_id IN "
                              "(SELECT value FROM json_each(?))", (batch,))
                    c.execute("DELETE FROM jobq_payloads WHERE job_id IN "
                              "(SELECT value FROM json_each(?))", (batch,))
                    c.execute("DELETE FROM jobq_jobs WHERE id IN (SELECT value FROM json_each(?))",
                              (batch,))
            pruned += len(ids)
            if len(ids) < _BATCH:
                return pruned

    @_guarded
    def job_count(self, where: ListFilter, now: float) -> int:
        conds, params, _ = _list_conditions(where, now)
        sql = "SELECT count(*) FROM jobq_jobs" + (" WHERE " + " AND ".join(conds) if conds else "")
        return self._conn.execute(sql, params).fetchone()[0]

    @_guarded
    def job_throughput(self, start: float, bucket: float, buckets: int) -> Throughput:
        end = start + bucket * buckets
        counts = {s: [0] * buckets for s in ("succeeded", "dead", "failed")}
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
                (start, bucket, start, end, Outcome.FAILED, Outcome.LEASE_EXPIRED,
                 Outcome.LEASE_LOST),
            ).fetchall()
        for status, b, n in rows:
            if 0 <= b < buckets:
                counts[status][b] += n
        return Throughput(start, bucket, tuple(counts["succeeded"]), tuple(counts["failed"]),
                          tuple(counts["dead"]))

    @_guarded
    def job_dead_groups(self, where: ListFilter) -> list[ErrorGroup]:
        conds, params, _ = _list_conditions(
            ListFilter(JobStatus.DEAD, where.queue, where.kind, where.worker, where.error_contains),
            0.0,
        )
        # SQL groups by first line and the error's tail (where a traceback's exception
        # line is); Python then merges groups whose error line differs only in numbers.
        rows = self._conn.execute(
            "SELECT kind, substr(coalesce(error, ''), 1, "
            "instr(coalesce(error, '') || char(10), char(10)) - 1), "
            "substr(coalesce(error, ''), -300), count(*), max(finished_at), max(id), "
            "json_group_array(DISTINCT queue) FROM jobq_jobs "
            f"WHERE {' AND '.join(conds)} AND finished_at IS NOT NULL GROUP BY 1, 2, 3",
            params,
        ).fetchall()
        groups: dict[tuple[str, str], dict] = {}
        for kind, first, tail, n, finished, last_id, queues in rows:
            line = error_line(f"{first}\n{tail}")  # the tail holds a traceback's last line
            g = groups.setdefault((kind, _DIGITS.sub("#", line)), {
                "kind": kind, "line": line, "count": 0, "last_finished_at": finished,
                "last_id": last_id, "queues": set(), "match": _DIGITS.split(line, 1)[0],
            })
            g["count"] += n
            g["queues"].update(json.loads(queues))
            if last_id > g["last_id"]:
                g.update(line=line, last_id=last_id, last_finished_at=finished)
        out = [ErrorGroup(**{**g, "queues": tuple(sorted(g["queues"])),
                             "match": g["match"].strip() or g["line"]})
               for g in groups.values()]
        out.sort(key=lambda g: (-g.count, -g.last_finished_at))
        return out[: where.limit]

    @_guarded
    def stats(self, now: float, window: float) -> Stats:
        return _stats(self, now, window)

    # -- workers ------------------------------------------------------------------------

    @_guarded
    def worker_register(self, info: WorkerInfo) -> None:
        queues = None if info.queues is None else json.dumps(list(info.queues))
        self._conn.execute(
            "INSERT OR REPLACE INTO jobq_workers(id, host, pid, queues, concurrency, started_at, "
            "last_seen, busy) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (info.id, info.host, info.pid, queues, info.concurrency, info.started_at,
             info.last_seen, info.busy),
        )

    @_guarded
    def worker_beat(self, worker_id: str, now: float, busy: int) -> None:
        self._conn.execute(
            "UPDATE jobq_workers SET last_seen=?, busy=? WHERE id=?", (now, busy, worker_id)
        )

    @_guarded
    def worker_deregister(self, worker_id: str) -> None:
        self._conn.execute("DELETE FROM jobq_workers WHERE id=?", (worker_id,))

    @_guarded
    def worker_list(self) -> list[WorkerInfo]:
        rows = self._conn.execute(
            "SELECT id, host, pid, queues, concurrency, started_at, last_seen, busy "
            "FROM jobq_workers ORDER BY id"
        ).fetchall()
        return [
            WorkerInfo(r[0], r[1], r[2], None if r[3] is None else tuple(json.loads(r[3])),
                       r[4], r[5], r[6], r[7])
            for r in rows
        ]

    # -- misc ---------------------------------------------------------------------------

    @_guarded
    def data_version(self) -> int:
        return self._conn.execute("PRAGMA data_version").fetchone()[0]

    @_guarded
    def integrity_check(self) -> str:
        return "; ".join(r[0] for r in self._conn.execute("PRAGMA integrity_check"))

    @_guarded
    def explain_claim(self, queues: Sequence[str] | None = None, limit: int = 1) -> list[str]:
        """The query plan of the claim statement (tests assert it uses the partial index)."""
        queues = list(queues or [])
        sql = "EXPLAIN QUERY PLAN " + _claim_sql(len(queues), limit == 1)
        params = [0.0, "w", 0.0, 0.0, *_claim_params(queues, 0.0, limit)]
        return [r[3] for r in self._conn.execute(sql, params)]

    def close(self) -> None:
        with self._lock:
            self._conn.close()


_REVIVE = (
    "UPDATE jobq_jobs SET status='pending', run_at=?, attempts=0, finished_at=NULL, "
    "lease_until=NULL, token=NULL, cancel_requested=0, progress=NULL, progress_message=NULL"
)


@contextmanager
def _nothing(c: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    yield c


def _is_big(payload: str) -> bool:
    n = len(payload)  # characters; UTF-8 needs 1 to 4 bytes for each
    return n > INLINE_PAYLOAD_MAX or (
        n * 4 > INLINE_PAYLOAD_MAX and len(payload.encode()) > INLINE_PAYLOAD_MAX)


def _needs_care(job: NewJob) -> bool:
    return job.unique_key is not None or _is_big(job.payload)


def _insert_row(job: NewJob, now: float) -> tuple:
    return (*job, now)  # NewJob's fields are in _INSERT's column order


def _leave_running(
    c: sqlite3.Connection, job_id: int, token: int, attempts: int, max_attempts: int,
    cancel: bool, now: float, retry_delay: RetryDelay, error: str,
) -> None:
    """Move a failed or expired attempt's job on: cancelled, dead, or pending after backoff."""
    if cancel:
        status, run_at, finished = JobStatus.CANCELLED, now, now
    elif attempts >= max_attempts:
        status, run_at, finished = JobStatus.DEAD, now, now
    else:
        status, run_at, finished = JobStatus.PENDING, now + max(0.0, retry_delay(attempts)), None
    c.execute(_LEAVE_RUNNING, (status, run_at, attempts, error, finished, job_id, token))


_FINISHED = (JobStatus.SUCCEEDED, JobStatus.DEAD, JobStatus.CANCELLED)
_LIST_ORDER = {
    JobStatus.PENDING: _ORDER_PENDING[len("ORDER BY "):],
    "scheduled": "run_at, id",
    "retrying": "run_at, id",
    JobStatus.RUNNING: "lease_until, id",
}


_DIGITS = re.compile(r"\d+")


def _list_conditions(where: ListFilter, now: float) -> tuple[list[str], list, str]:
    """WHERE fragments for a listing; each is a fixed string, every value a parameter."""
    conds: list[str] = []
    params: list = []
    status = where.status
    if status in ("scheduled", "retrying"):
        conds.append("status='pending'")
        conds.append("run_at>?" if status == "scheduled" else "attempts>0")
        params += [now] if status == "scheduled" else []
    elif status is not None:
        conds.append("status=?")
        params.append(str(status))
        if status in _FINISHED:  # true for them anyway; lets SQLite use the finished index
            conds.append("finished_at IS NOT NULL")
    for column, value in (("queue", where.queue), ("kind", where.kind), ("worker", where.worker)):
        if value is not None:
            conds.append(f"{column}=?")
            params.append(value)
    if where.error_contains:
        conds.append("instr(error, ?) > 0")
        params.append(where.error_contains)
    if status is None:
        order = "id DESC"
    else:
        order = _LIST_ORDER.get(status, "finished_at DESC, id DESC")
    return conds, params, order


def _stats(store: SqliteStore, now: float, window: float) -> Stats:
    queues: dict[str, dict] = {}
    with store._read() as c:
        pending = scheduled = retrying = 0
        oldest = None
        for q, n, sched, retry, first in c.execute(PENDING_BY_QUEUE, (now, now)):
            queues.setdefault(q, {})["pending"] = n
            queues[q]["oldest_pending_at"] = first
            pending, scheduled, retrying = pending + n, scheduled + sched, retrying + retry
            if first is not None and (oldest is None or first < oldest):
                oldest = first
        running = expired = 0
        for q, n, exp in c.execute(RUNNING_BY_QUEUE, (now,)):
            queues.setdefault(q, {})["running"] = n
            running, expired = running + n, expired + exp
        dead = 0
        for q, n in c.execute(DEAD_BY_QUEUE):
            queues.setdefault(q, {})["dead"] = n
            dead += n
        recent = dict(c.execute(RECENT_FINISHED, (now - window,)).fetchall())
    return Stats(
        now=now, window=window, pending=pending, scheduled=scheduled, retrying=retrying,
        running=running, dead=dead, succeeded_recent=recent.get("succeeded", 0),
        dead_recent=recent.get("dead", 0), cancelled_recent=recent.get("cancelled", 0),
        expired_leases=expired, oldest_pending_at=oldest,
        queues={q: QueueStats(**v) for q, v in sorted(queues.items())},
    )


# -- opening ----------------------------------------------------------------------------


_NETWORK_FS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs",
               "lustre", "fuse.sshfs", "fuse.s3fs", "fuse.gcsfuse", "fuse.rclone")


def filesystem_type(path: str, mounts: str | None = None) -> str | None:
    """The type of the filesystem holding ``path``, from /proc/self/mounts (None where
    that cannot be read, e.g. not on Linux)."""
    if mounts is None:
        try:
            with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
                mounts = f.read()
        except OSError:
            return None
    target = os.path.realpath(path)
    best, kind = "", None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind


def _warn_if_network(path: str) -> None:
    kind = filesystem_type(os.path.dirname(os.path.abspath(path)) or ".")
    if kind in _NETWORK_FS:
        warnings.warn(
            f"{path} is on a network filesystem ({kind}): SQLite's WAL mode does not work "
            "there, and jobs may be lost or run twice; keep the database on a local disk",
            NetworkFilesystemWarning, stacklevel=4)


def _code(e: sqlite3.Error) -> int:
    return (getattr(e, "sqlite_errorcode", None) or 0) & 0xFF


def _connect(path: str, busy_timeout: float, read_only: bool, create: bool,
             immutable: bool = False) -> sqlite3.Connection:
    if os.path.isdir(path):
        raise DatabaseError(f"{path} is a directory, not a database file")
    if not os.path.exists(path):
        if not create:
            raise DatabaseError(f"{path}: no such database file")
        try:  # owner-only from the first byte; SQLite gives -wal and -shm the same mode
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            pass  # another process created it first: open theirs
        except OSError as e:
            raise DatabaseError(f"{path}: cannot create the database file ({e.strerror})") from None
    target = f"file:{_uri_path(path)}?mode=ro" if read_only else path
    if immutable:
        target += "&immutable=1"
    try:
        conn = sqlite3.connect(
            target, timeout=busy_timeout, isolation_level=None, check_same_thread=False,
            uri=read_only, cached_statements=256,
        )
        conn.text_factory = _text
        return conn
    except sqlite3.Error as e:
        raise DatabaseUnavailable(f"{path}: cannot open the database ({e})") from None


def _uri_path(path: str) -> str:
    from urllib.parse import quote

    return quote(os.path.abspath(path))


def _installed_version(c: sqlite3.Connection, path: str) -> int:
    """jobq's schema version in this file (0: none yet). Reads only: a file that is not
    ours, not SQLite, or too new is refused before anything is written to it."""
    names = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    ours = [t for t in TABLES if t in names]
    if not ours:
        return 0
    if "jobq_meta" not in names:
        raise ForeignTable(f"{path} has a table named {ours[0]!r} that jobq did not create")
    try:
        meta = dict(c.execute("SELECT key, value FROM jobq_meta").fetchall())
    except sqlite3.Error:
        meta = {}
    if meta.get("application") != APP_ID or not str(meta.get("schema_version", "")).isdigit():
        raise ForeignTable(f"{path} has a table named 'jobq_meta' that jobq did not create")
    version = int(meta["schema_version"])
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"{path} has jobq schema version {version}, newer than this jobq understands "
            f"({SCHEMA_VERSION}); upgrade jobq to use it"
        )
    return version


def _set_pragmas(c: sqlite3.Connection, path: str, synchronous: str) -> None:
    if c.execute("PRAGMA page_count").fetchone()[0] == 0:  # empty file: its layout is ours
        c.execute(f"PRAGMA page_size={PAGE_SIZE:d}")
    mode = c.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise DatabaseError(f"{path}: cannot switch the database to WAL mode (it stays in {mode!r})")
    c.execute(f"PRAGMA synchronous={synchronous}")  # validated against SYNCHRONOUS_MODES
    # SQLite checkpoints after 1000 pages of WAL: 4 MiB at its default page size, but only
    # 1 MiB at jobq's. A checkpoint syncs the WAL and the database file even under NORMAL,
    # so keep the 4 MiB SQLite meant (a drain runs ~6 % faster than at 1 MiB).
    page_size = c.execute("PRAGMA page_size").fetchone()[0]
    c.execute(f"PRAGMA wal_autocheckpoint={max(1000, WAL_CHECKPOINT_BYTES // page_size):d}")


def _migrate(c: sqlite3.Connection) -> None:
    c.execute("BEGIN IMMEDIATE")
    try:
        names = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "jobq_meta" in names:  # re-read under the write lock: another process may have won
            version = int(c.execute(
                "SELECT value FROM jobq_meta WHERE key='schema_version'").fetchone()[0])
            owns = c.execute("SELECT 1 FROM jobq_meta WHERE key='owns_user_version'").fetchone()
        else:
            version = 0
            others = [n for n in names if not n.startswith("sqlite_")]
            owns = not others and c.execute("PRAGMA user_version").fetchone()[0] == 0
        for script in MIGRATIONS[version:]:
            for statement in _statements(script):
                c.execute(statement)
        c.execute("INSERT OR REPLACE INTO jobq_meta VALUES ('application', ?)", (APP_ID,))
        c.execute("INSERT OR REPLACE INTO jobq_meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        if owns:
            c.execute("INSERT OR REPLACE INTO jobq_meta VALUES ('owns_user_version', '1')")
            c.execute(f"PRAGMA user_version={SCHEMA_VERSION:d}")
        c.execute("COMMIT")
    except BaseException:
        if c.in_transaction:
            c.execute("ROLLBACK")
        raise


def _statements(script: str) -> list[str]:
    """Split a migration script into statements (executescript would commit on its own)."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    return [s for s in out if s]
