"""The PostgreSQL store: jobq's job operations on a PostgreSQL server, for workers on
many hosts.

Concurrency model: each ``PostgresStore`` owns a small pool (``Connections``, two
connections by default) shared by the threads of its process, plus one LISTEN connection
per watch: a worker needs three whatever its concurrency. Row locks do the rest: claims
skip each other's rows (``SKIP LOCKED``), and every write to a running job carries the
fence and checks what it changed. Each operation is one statement in autocommit mode
where it can be (claim, complete, heartbeat: one round trip each), else one transaction.

Every operation runs through ``Connections.run``, which retries it on a fresh connection
after a break. An operation that may have committed before the break (``again``) checks
what it finds: a completion whose job is already succeeded under its token was accepted;
a failure whose attempt row exists was recorded. An enqueue cannot tell its jobs from
another's, so it reports the break instead of adding them twice.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

import psycopg
from psycopg import errors as pgerrors
from psycopg.types.json import Jsonb

from ...checks import check_int, check_seconds
from ...clock import Clock
from ...error_groups import group_dead
from ...errors import (
    DatabaseError, DatabaseUnavailable, InvalidState, JobNotFound, UnusableConnection,
)
from ...types import (
    Attempt, ErrorGroup, ExtendResult, Job, JobStatus, Outcome, QueueStats, Rate, ScheduleInfo,
    Stats, Throughput, WorkerInfo,
)
from .. import statements as shared
from ..base import (
    FINISHED_STATUSES, TAKEN_BACK, Completion, ConnectionIdentity, CopiedJob, ListFilter,
    NewJob, RetryDelay, lease_expired,
)
from ..rows import (
    THROUGHPUT_FAILED, attempts_from_rows, claimed_job, controls_from_rows, job_from_row,
    stats_from_rows, throughput_from_rows, worker_children,
)
from . import app_connection
from . import statements as sql
from .connection import Connections, ServerClock, parse_url
from .notify import Notifier
from .schema import SCHEMA_VERSION, installed_version, migrate
from .watch import SNAPSHOT, PgWatch
from ..controls import ControlCache

_BATCH = 1000  # rows per transaction for maintenance work (reap, prune)
SYNCHRONOUS = {"NORMAL": "off", "FULL": "on"}


def _claim_order(job: Job) -> tuple:
    return -job.priority, job.run_at, job.id


class PostgresStore:
    """jobq on PostgreSQL. ``url`` is a libpq URL (``postgresql://user@host/db``), which
    may also carry ``poll_only=true``.

    Options: ``poll_only`` (no LISTEN/NOTIFY and no prepared statements: for PgBouncer in
    transaction mode; idle workers then find work by polling), ``pool_size`` (connections
    shared by the process's threads, default 2), ``busy_timeout`` (seconds an operation
    waits for a row lock, and retries after the connection broke, before it reports the
    database unavailable; default 30), ``read_only`` (the session cannot write and the
    schema is not created), ``synchronous`` (``FULL``: ``synchronous_commit=on``;
    ``NORMAL``: ``off``, a server crash may lose the last commits, as a power loss may
    under SQLite's NORMAL; default: the server's setting), ``create`` (False:
    refuse a database without jobq's tables instead of creating them; jobq never creates
    the PostgreSQL database itself), ``poll_interval`` (seconds between a watch's
    snapshot polls, default 1).
    """

    def __init__(
        self,
        url: str,
        *,
        poll_only: bool | None = None,
        pool_size: int = 2,
        busy_timeout: float = 30.0,
        read_only: bool = False,
        synchronous: str | None = None,
        create: bool = True,
        poll_interval: float = 1.0,
        application_name: str = "jobq",
    ):
        check_int("pool_size", pool_size, minimum=1)
        check_seconds("busy_timeout", busy_timeout)
        check_seconds("poll_interval", poll_interval, positive=True)
        conninfo, self.display, url_options = parse_url(url)
        if poll_only is None:
            poll_only = url_options.get("poll_only", False)
        if synchronous is not None:
            synchronous = str(synchronous).upper()
            if synchronous not in SYNCHRONOUS:
                raise ValueError(f"synchronous must be one of {tuple(SYNCHRONOUS)} on "
                                 f"PostgreSQL, got {synchronous!r}")
        if not re.fullmatch(r"[\w .:-]{1,63}", application_name):
            raise ValueError(f"application_name must be plain text, got {application_name!r}")
        self.url = url
        self.poll_only = bool(poll_only)
        self.read_only = read_only
        self.synchronous = synchronous
        self.poll_interval = float(poll_interval)
        self.frozen = False
        setup = [f"SET application_name = '{application_name}'",
                 f"SET lock_timeout = {math.ceil(busy_timeout * 1000):d}"]
        if read_only:
            setup.append("SET default_transaction_read_only = on")
        if synchronous:
            setup.append(f"SET synchronous_commit = {SYNCHRONOUS[synchronous]}")
        self._conns = Connections(conninfo, self.display, size=pool_size, prepare=not poll_only,
                                  setup="; ".join(setup), connect_timeout=min(10.0, busy_timeout + 2),
                                  reconnect_for=busy_timeout)
        first = self._conns.new()  # a bad URL, password or database fails here, in one line
        try:
            self.server_version = first.info.parameter_status("server_version") or "?"
            version = installed_version(first, self.display)
            if version == 0 and (read_only or not create):
                # Only a store that may create a database puts jobq's tables in it: the
                # read and admin commands leave an application's database untouched.
                raise DatabaseError(f"{self.display} is not a jobq database (it has no jobq "
                                    "tables; `jobq enqueue` or `jobq run` creates them)")
            if version < SCHEMA_VERSION:
                if read_only:
                    raise DatabaseError(f"{self.display} has an older jobq schema: open it "
                                        "once without read-only mode to upgrade it")
                migrate(first, self.display)
            self._clock = ServerClock(self._conns, first)
            self._identity = _own_identity(first)
        except psycopg.Error as e:
            first.close()
            raise DatabaseUnavailable(f"{self.display}: {e}") from None
        except BaseException:
            first.close()
            raise
        self._conns.adopt(first)
        self._notifier = Notifier(self._conns)
        self._controls = ControlCache()

    def _notify(self, queues: Iterable[str]) -> list[str]:
        """The queues this transaction should notify now (none in poll-only mode); the
        others get a trailing notification once ``_run_notifying`` saw the transaction end.
        Delayed jobs notify too: an idle worker then sets its timer for their ``run_at``."""
        return [] if self.poll_only else self._notifier.due(queues)

    def _run_notifying(self, op):
        """``Connections.run`` for an operation that may notify (see ``notify.py``)."""
        try:
            return self._conns.run(op)
        finally:
            self._notifier.flush()

    # -- producing ----------------------------------------------------------------------

    def job_insert_many(self, jobs: Sequence[NewJob], now: float) -> list[int]:
        if not any(j.unique_key is not None for j in jobs):
            return self._run_notifying(lambda c, again: self._insert_plain(c, jobs, now, again, True))

        def op(c: psycopg.Connection, again: bool) -> list[int]:
            _refuse_if_maybe_committed(again, self.display)
            ids: list[int] = []
            with c.transaction():
                plain: list[NewJob] = []
                for job in jobs:
                    if job.unique_key is None:
                        plain.append(job)
                        continue
                    ids += self._insert_plain(c, plain, now, again, False)
                    plain = []
                    ids.append(app_connection.insert_unique(c, job, now))
                ids += self._insert_plain(c, plain, now, again, False)
                queues = self._notify(j.queue for j in jobs)
                if queues:
                    c.execute(sql.NOTIFY, (queues,))
            return ids

        return self._run_notifying(op)

    def _insert_plain(self, c: psycopg.Connection, jobs: Sequence[NewJob], now: float,
                      again: bool, notify: bool) -> list[int]:
        if not jobs:
            return []
        _refuse_if_maybe_committed(again, self.display)
        queues = self._notify(j.queue for j in jobs) if notify else []
        rows = c.execute(sql.INSERT_MANY, {
            "now": now, "kind": [j.kind for j in jobs], "payload": [j.payload for j in jobs],
            "queue": [j.queue for j in jobs], "priority": [j.priority for j in jobs],
            "run_at": [j.run_at for j in jobs], "max_attempts": [j.max_attempts for j in jobs],
            "notify": queues,
        }).fetchall()
        return sorted(r[0] for r in rows)  # ids follow the batch's order

    # -- on the application's connection (see app_connection.py) ------------------------

    def job_insert_many_on(self, conn: object, jobs: Sequence[NewJob], now: float) -> list[int]:
        self._check_app_connection(conn)
        return app_connection.insert_many(conn, jobs, now)

    def job_complete_on(self, conn: object, completion: Completion, now: float) -> bool:
        self._check_app_connection(conn)
        return app_connection.complete(conn, completion, now)

    def same_database(self, identity: ConnectionIdentity) -> bool:
        if identity.store != app_connection.STORE:
            return False
        if identity.key == self._identity:
            return True
        # The server may have restarted since this store read its own identity (a new
        # start time): read it again, once, before saying no.
        self._identity = self._conns.run(lambda c, _again: _own_identity(c))
        return identity.key == self._identity

    def _check_app_connection(self, conn: object) -> None:
        identity = app_connection.identity(conn)
        if not self.same_database(identity):
            how = ""
            if identity.key[1] == self._identity[1] and identity.key[2] is not None:
                how = (" (a database of that name, but another server, or another jobq_jobs "
                       "table through the connection's search_path)")
            raise UnusableConnection(f"the connection given with conn= is to {identity.where}, "
                                     f"not to this queue's database {self.display}{how}; "
                                     "nothing was written")

    # -- consuming ----------------------------------------------------------------------

    def job_claim(
        self, worker: str, queues: Sequence[str] | None, now: float, lease_until: float,
        limit: int, attempt_limits: Mapping[str, int] | None = None,
    ) -> list[Job]:
        return self._conns.run(lambda c, _again: self._claim(
            c, worker, queues, now, lease_until, limit, attempt_limits))

    def job_next_run_at(self, queues: Sequence[str] | None, after: float) -> float | None:
        queues = list(dict.fromkeys(queues)) if queues else []
        query = shared.next_run_at_sql(sql.D, len(queues))
        params = shared.next_run_at_params(queues, after)
        return self._conns.run(lambda c, _again: c.execute(query, params).fetchone()[0])

    def _claim(self, c: psycopg.Connection, worker: str, queues: Sequence[str] | None,
               now: float, lease_until: float, limit: int,
               attempt_limits: Mapping[str, int] | None = None) -> list[Job]:
        queues = list(dict.fromkeys(queues)) if queues else []
        params = {"now": now, "limit": limit, "lease": lease_until, "worker": worker}
        if len(queues) == 1:
            params["queue"] = queues[0]
        elif queues:
            params["queues"] = queues
        if attempt_limits:
            params["lkinds"], params["llimits"] = list(attempt_limits), list(
                attempt_limits.values())
        query, limited, plain = self._claim_shape(c, queues, bool(attempt_limits))
        params["locked"] = []
        if limited and not c.info.transaction_status:  # autocommit, idle: our own transaction
            with c.transaction():
                params["locked"] = [r[0] for r in c.execute(sql.LOCK_LIMITED, (limited,))]
                rows = c.execute(query, params).fetchall()
        else:
            if limited:  # inside job_complete_and_claim's transaction
                params["locked"] = [r[0] for r in c.execute(sql.LOCK_LIMITED, (limited,))]
            rows = c.execute(query, params).fetchall()
        jobs = [claimed_job(r, lease_until, worker, now) for r in rows]
        if plain:
            self._controls.claimed(limit, len(jobs))
        if len(jobs) > 1:
            jobs.sort(key=_claim_order)  # RETURNING order is unspecified
        return jobs

    def _claim_shape(self, c: psycopg.Connection, queues: list[str],
                     clamped: bool = False) -> tuple[str, list[str], bool]:
        """The claim statement for ``queues`` (see ``controls``), the limited queues it
        may start jobs of (their rows are locked before it runs), and whether it is the
        plain claim on every queue."""
        controls = self._controls.get(lambda: c.execute(sql.CONTROL_STATE).fetchall())
        per_queue = not queues and controls.busy
        if queues:
            limited = [q for q in queues if q in controls.limited]
        else:
            limited = list(controls.limited) if per_queue else []
        return (sql.claim_sql(len(queues), per_queue, clamped), limited,
                not queues and not per_queue)

    def job_extend_many(
        self, leases: Iterable[tuple[int, int]], now: float, lease_until: float
    ) -> ExtendResult:
        leases = list(leases)
        if not leases:
            return ExtendResult(frozenset(), frozenset())
        ids = [job_id for job_id, _ in leases]
        tokens = [token for _, token in leases]
        rows = self._conns.run(lambda c, _again: c.execute(
            sql.EXTEND_MANY, (lease_until, now, ids, tokens)).fetchall())
        ours = {job_id: cancel for job_id, cancel in rows}
        return ExtendResult(frozenset(set(ids) - set(ours)),
                            frozenset(job_id for job_id, cancel in ours.items() if cancel))

    def job_complete_and_claim(
        self, completions: Sequence[Completion], now: float, worker: str,
        queues: Sequence[str] | None, lease_until: float, limit: int,
        attempt_limits: Mapping[str, int] | None = None,
    ) -> tuple[list[bool], list[Job]]:
        def op(c: psycopg.Connection, again: bool) -> tuple[list[bool], list[Job]]:
            with c.transaction():
                accepted = _complete(c, completions, now, again)
                jobs = self._claim(c, worker, queues, now, lease_until, limit,
                                   attempt_limits) if limit > 0 else []
            return accepted, jobs

        return self._conns.run(op)

    def job_complete_many(self, completions: Sequence[Completion], now: float) -> list[bool]:
        return self._conns.run(lambda c, again: _complete(c, completions, now, again))

    def job_fail(
        self, job_id: int, token: int, error: str, now: float, retry_delay: RetryDelay
    ) -> Job | None:
        return self._fail(job_id, token, error, now, retry_delay, give_up=False)

    def job_give_up(self, job_id: int, token: int, error: str, now: float) -> Job | None:
        return self._fail(job_id, token, error, now, lambda _attempt: 0.0, give_up=True)

    def _fail(self, job_id: int, token: int, error: str, now: float, retry_delay: RetryDelay,
              give_up: bool) -> Job | None:
        """One transaction: record the failed attempt and move the job on. ``give_up`` ends
        it dead whatever attempts remain, without touching its stored allowance."""

        def op(c: psycopg.Connection, again: bool) -> Job | None:
            with c.transaction():
                row = c.execute(sql.RUNNING_ROW, (job_id, token)).fetchone()
                if row is None:
                    if again and _attempt_recorded(c, job_id, token):
                        return self._get(c, job_id)  # the first try committed
                    return None
                attempts, max_attempts, worker, started_at, cancel, queue = row
                outcome = Outcome.CANCELLED if cancel else Outcome.FAILED
                job = _leave_running(c, job_id, token, attempts,
                                     attempts if give_up else max_attempts, cancel, now,
                                     retry_delay, error)
                c.execute(sql.RECORD_ATTEMPT, (job_id, attempts, worker, token, started_at, now,
                                               outcome, error))
                if job.status == JobStatus.PENDING:
                    self._send(c, [queue])
                return job

        return self._run_notifying(op)

    def job_release(self, job_id: int, token: int, now: float) -> bool:
        def op(c: psycopg.Connection, again: bool) -> bool:
            with c.transaction():
                row = c.execute(sql.RUNNING_ROW, (job_id, token)).fetchone()
                if row is None:
                    return again and _attempt_recorded(c, job_id, token)
                attempts, _max, worker, started_at, cancel, queue = row
                moved, outcome = shared.after_release(attempts, cancel, now)
                c.execute(sql.LEAVE_RUNNING, (*moved, job_id, token))
                c.execute(sql.RECORD_ATTEMPT, (job_id, attempts, worker, token, started_at, now,
                                               outcome, None))
                if not cancel:
                    self._send(c, [queue])
                return True

        return self._run_notifying(op)

    def job_progress(
        self, job_id: int, token: int, fraction: float | None, message: str | None
    ) -> bool:
        return self._conns.run(lambda c, _again: c.execute(
            sql.PROGRESS, (fraction, message, job_id, token)).rowcount == 1)

    def job_reap_expired(self, now: float, retry_delay: RetryDelay) -> int:
        def batch(c: psycopg.Connection, _again: bool) -> tuple[int, int]:
            """(expired leases read, jobs moved)."""
            with c.transaction():
                rows = c.execute(sql.EXPIRED_LEASES, (now, _BATCH)).fetchall()
                if not rows:
                    return 0, 0
                cols: list[list] = [[] for _ in range(6)]
                attempts_rows: list[list] = [[] for _ in range(8)]
                queues = set()
                for job_id, token, attempts, max_attempts, worker, started, lease, cancel, queue \
                        in rows:
                    error = lease_expired(lease, now)
                    status, run_at, finished = shared.after_attempt(
                        attempts, max_attempts, cancel, now, retry_delay)
                    if status == JobStatus.PENDING:
                        queues.add(queue)
                    for col, value in zip(cols, (job_id, token, str(status), run_at, error,
                                                 finished)):
                        col.append(value)
                    for col, value in zip(attempts_rows, (job_id, attempts, worker, token, started,
                                                          now, str(Outcome.LEASE_EXPIRED), error)):
                        col.append(value)
                moved = {r[0] for r in c.execute(sql.REAP_MANY, (*cols, now)).fetchall()}
                keep = [i for i, job_id in enumerate(attempts_rows[0]) if job_id in moved]
                c.execute(sql.RECORD_ATTEMPTS, [[col[i] for i in keep] for col in attempts_rows])
                self._send(c, queues)
                return len(rows), len(moved)

        reaped = 0
        while True:
            read, moved = self._run_notifying(batch)
            reaped += moved
            if read < _BATCH:
                return reaped

    def _send(self, c: psycopg.Connection, queues: Iterable[str]) -> None:
        due = self._notify(queues)
        if due:
            c.execute(sql.NOTIFY, (due,))

    # -- reading ------------------------------------------------------------------------

    @staticmethod
    def _get(c: psycopg.Connection, job_id: int) -> Job | None:
        row = c.execute(f"SELECT {sql.JOB_COLS} FROM jobq_jobs WHERE id=%s", (job_id,)).fetchone()
        return job_from_row(row) if row else None

    def job_get(self, job_id: int) -> Job | None:
        return self._conns.run(lambda c, _again: self._get(c, job_id))

    def job_list(self, where: ListFilter, now: float) -> list[Job]:
        query, params = shared.list_query(sql.D, where, now,
                                          sql.JOB_COLS if where.payloads else sql.JOB_COLS_LEAN)
        rows = self._conns.run(lambda c, _again: c.execute(query, params).fetchall())
        return [job_from_row(r) for r in rows]

    def job_attempts(self, job_id: int) -> list[Attempt]:
        ended, current = shared.attempts_of(sql.D)

        def op(c: psycopg.Connection, _again: bool):
            with _snapshot(c):
                return (c.execute(ended, (job_id,)).fetchall(),
                        c.execute(current, (job_id,)).fetchone())

        return attempts_from_rows(job_id, *self._conns.run(op))

    # -- administering ------------------------------------------------------------------

    def job_retry(self, job_id: int, now: float, force: bool = False) -> None:
        def op(c: psycopg.Connection, _again: bool) -> None:
            with c.transaction():
                row = c.execute("SELECT status, queue, attempts, worker, token, started_at "
                                "FROM jobq_jobs WHERE id=%s FOR UPDATE", (job_id,)).fetchone()
                if row is None:
                    raise JobNotFound(job_id)
                if force and row[0] == JobStatus.RUNNING:
                    c.execute(sql.RECORD_ATTEMPT, (job_id, row[2], row[3], row[4], row[5], now,
                                                   Outcome.LEASE_LOST, TAKEN_BACK))
                elif row[0] not in (JobStatus.DEAD, JobStatus.CANCELLED):
                    raise InvalidState(f"job {job_id} is {row[0]}; only dead or cancelled jobs "
                                       "can be retried (a running one with force)")
                try:
                    with c.transaction():
                        c.execute(sql.REVIVE + " WHERE id=%s", (now, job_id))
                except pgerrors.UniqueViolation:
                    raise InvalidState(
                        f"job {job_id}: another pending or running job holds its unique key"
                    ) from None
                self._send(c, [row[1]])

        self._run_notifying(op)

    def job_retry_dead(self, where: ListFilter, now: float) -> int:
        conds, params, _ = sql.list_conditions(shared.dead_filter(where), now)
        match = " AND ".join(conds)

        def op(c: psycopg.Connection, _again: bool) -> int:
            with c.transaction():
                queues = [r[0] for r in c.execute(
                    f"{sql.REVIVE} WHERE {match} AND unique_key IS NULL RETURNING queue",
                    [now, *params])]
                # A job whose unique key is live elsewhere (or in an earlier job of this
                # retry) stays dead: one at a time, each behind a savepoint.
                keyed = c.execute(f"SELECT id FROM jobq_jobs WHERE {match} AND unique_key IS NOT "
                                  "NULL ORDER BY id", params).fetchall()
                for (job_id,) in keyed:
                    try:
                        with c.transaction():
                            queues += [r[0] for r in c.execute(
                                f"{sql.REVIVE} WHERE id=%s RETURNING queue", (now, job_id))]
                    except pgerrors.UniqueViolation:
                        pass
                self._send(c, set(queues))
                return len(queues)

        return self._run_notifying(op)

    def job_cancel(self, job_id: int, now: float) -> str:
        def op(c: psycopg.Connection, _again: bool) -> str:
            with c.transaction():
                row = c.execute("SELECT status FROM jobq_jobs WHERE id=%s FOR UPDATE",
                                (job_id,)).fetchone()
                if row is None:
                    raise JobNotFound(job_id)
                if row[0] == JobStatus.PENDING:
                    c.execute("UPDATE jobq_jobs SET status='cancelled', finished_at=%s WHERE id=%s",
                              (now, job_id))
                    return JobStatus.CANCELLED
                if row[0] == JobStatus.RUNNING:
                    c.execute("UPDATE jobq_jobs SET cancel_requested=true WHERE id=%s", (job_id,))
                    return JobStatus.RUNNING
                raise InvalidState(f"job {job_id} is already {row[0]}")

        return self._conns.run(op)

    def job_copy_in(self, jobs: Sequence[CopiedJob]) -> list[int]:
        def op(c: psycopg.Connection, again: bool) -> list[int]:
            _refuse_if_maybe_committed(again, self.display)
            ids = []
            with c.transaction():
                for x in jobs:
                    row = c.execute(sql.COPY_IN, (*x.job, x.created_at, str(x.status), x.attempts,
                                                  x.error, x.finished_at)).fetchone()
                    if row is None:  # a live job here holds its unique key
                        row = c.execute(sql.LIVE_WITH_KEY, (x.job.unique_key,)).fetchone()
                    ids.append(row[0])
                self._send(c, {x.job.queue for x in jobs if x.status == JobStatus.PENDING})
            return ids

        return self._run_notifying(op)

    def job_prune(self, finished_before: float, statuses: Sequence[str] = FINISHED_STATUSES,
                  dry_run: bool = False) -> dict[str, int]:
        statuses = [str(s) for s in statuses]
        # The newest job is never pruned (the Ids rule of store.base; a sequence never
        # hands an id out twice anyway, but every store keeps the same rule).
        where = ("status = ANY(%s) AND finished_at<%s "
                 "AND id<(SELECT max(id) FROM jobq_jobs)")
        params = (list(statuses), finished_before)
        if dry_run:
            return dict(self._conns.run(lambda c, _again: c.execute(
                f"SELECT status, count(*) FROM jobq_jobs WHERE {where} GROUP BY status",
                params).fetchall()))
        query = (
            f"WITH gone AS (DELETE FROM jobq_jobs WHERE id IN (SELECT id FROM jobq_jobs "
            f"WHERE {where} LIMIT %s) RETURNING id, status), "
            "history AS (DELETE FROM jobq_attempts WHERE job_id IN (SELECT id FROM gone)) "
            "SELECT status, count(*) FROM gone GROUP BY status"
        )
        pruned: dict[str, int] = {}
        while True:
            rows = self._conns.run(lambda c, _again: c.execute(
                query, (*params, _BATCH)).fetchall())
            for status, n in rows:
                pruned[status] = pruned.get(status, 0) + n
            if sum(n for _, n in rows) < _BATCH:
                return pruned

    def job_count(self, where: ListFilter, now: float) -> int:
        query, params = shared.count_query(sql.D, where, now)
        return self._conns.run(lambda c, _again: c.execute(query, params).fetchone()[0])

    def job_throughput(self, start: float, bucket: float, buckets: int) -> Throughput:
        end = start + bucket * buckets

        def op(c: psycopg.Connection, _again: bool) -> list:
            with _snapshot(c):
                rows = c.execute(
                    "SELECT status, floor((finished_at - %s) / %s)::bigint, count(*) FROM jobq_jobs "
                    "WHERE status IN ('succeeded','dead') AND finished_at>=%s AND finished_at<%s "
                    "GROUP BY 1, 2", (start, bucket, start, end)).fetchall()
                rows += c.execute(
                    "SELECT 'failed', floor((ended_at - %s) / %s)::bigint, count(*) "
                    "FROM jobq_attempts WHERE ended_at>=%s AND ended_at<%s "
                    "AND outcome = ANY(%s) GROUP BY 2",
                    (start, bucket, start, end, [str(x) for x in THROUGHPUT_FAILED])).fetchall()
            return rows

        return throughput_from_rows(start, bucket, buckets, self._conns.run(op))

    def job_dead_groups(self, where: ListFilter) -> list[ErrorGroup]:
        conds, params, _ = sql.list_conditions(shared.dead_filter(where), 0.0)
        # SQL groups by first line and the error's tail (where a traceback's exception
        # line is); Python then merges groups whose error lines fold alike (group_key).
        query = (
            "SELECT kind, split_part(coalesce(error, ''), E'\\n', 1), right(coalesce(error, ''), 300), "
            "count(*), max(finished_at), max(id), array_agg(DISTINCT queue) FROM jobq_jobs "
            f"WHERE {' AND '.join(conds)} AND finished_at IS NOT NULL GROUP BY 1, 2, 3"
        )
        rows = self._conns.run(lambda c, _again: c.execute(query, params).fetchall())
        return group_dead(((kind, f"{first}\n{tail}", n, finished, last_id, list(queues))
                           for kind, first, tail, n, finished, last_id, queues in rows),
                          where.limit)

    def stats(self, now: float, window: float) -> Stats:
        def op(c: psycopg.Connection, _again: bool):
            with _snapshot(c):
                return (c.execute(sql.PENDING_BY_QUEUE, (now, now)).fetchall(),
                        c.execute(sql.RUNNING_BY_QUEUE, (now,)).fetchall(),
                        c.execute(sql.DEAD_BY_QUEUE).fetchall(),
                        dict(c.execute(sql.RECENT_FINISHED, (now - window,)).fetchall()),
                        c.execute(sql.QUEUE_CONTROLS).fetchall())

        return stats_from_rows(now, window, *self._conns.run(op))

    # -- queue controls and schedules ------------------------------------------------------

    def queue_pause(self, queue: str, paused: bool, now: float) -> None:
        def op(c: psycopg.Connection, _again: bool) -> None:
            with c.transaction():
                c.execute(sql.PAUSE, (queue, paused, now))
                c.execute(sql.DROP_UNCONTROLLED, (queue,))
                if not paused:
                    self._send(c, [queue])  # idle workers look again at once

        self._conns.run(op)
        self._controls.forget()

    def queue_set_limit(self, queue: str, concurrency: int | None, rate: Rate | None,
                        now: float) -> None:
        def op(c: psycopg.Connection, _again: bool) -> None:
            with c.transaction():
                c.execute(sql.SET_LIMIT, (queue, concurrency, rate and rate.limit,
                                          rate and rate.per, now))
                c.execute(sql.DROP_UNCONTROLLED, (queue,))
                self._send(c, [queue])

        self._conns.run(op)
        self._controls.forget()

    def queue_controls(self) -> dict[str, QueueStats]:
        return controls_from_rows(self._conns.run(
            lambda c, _again: c.execute(sql.QUEUE_CONTROLS).fetchall()))

    def schedule_register(self, schedule: ScheduleInfo) -> None:
        s = schedule
        self._conns.run(lambda c, _again: c.execute(sql.SCHEDULE_REGISTER, (
            s.key, s.kind, s.queue, s.every, s.cron, s.tz, s.last_tick, s.updated_at)))

    def schedule_tick(self, key: str, tick: float, job: NewJob, now: float) -> int | None:
        def op(c: psycopg.Connection, again: bool) -> int | None:
            with c.transaction():
                if c.execute(sql.SCHEDULE_TICK, (tick, now, key, tick)).rowcount != 1:
                    return None  # (after a break: the first try may have committed it)
                job_id = self._insert_plain(c, [job], now, False, True)[0]
                c.execute(sql.SCHEDULE_JOB, (job_id, key))
                return job_id

        return self._conns.run(op)

    def schedule_forget(self, key: str) -> bool:
        return self._conns.run(lambda c, _again: c.execute(
            sql.SCHEDULE_FORGET, (key,)).rowcount == 1)

    def schedule_list(self) -> list[ScheduleInfo]:
        rows = self._conns.run(lambda c, _again: c.execute(sql.SCHEDULES).fetchall())
        return [ScheduleInfo(*r) for r in rows]

    # -- workers ------------------------------------------------------------------------

    def worker_register(self, info: WorkerInfo) -> None:
        queues = None if info.queues is None else list(info.queues)
        self._conns.run(lambda c, _again: c.execute(
            "INSERT INTO jobq_workers(id, host, pid, queues, concurrency, started_at, last_seen, "
            "busy, beat_interval, lease, pool, children) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (id) DO UPDATE SET "
            "host=excluded.host, pid=excluded.pid, queues=excluded.queues, "
            "concurrency=excluded.concurrency, started_at=excluded.started_at, "
            "last_seen=excluded.last_seen, busy=excluded.busy, "
            "beat_interval=excluded.beat_interval, lease=excluded.lease, pool=excluded.pool, "
            "children=excluded.children",
            (info.id, info.host, info.pid, queues, info.concurrency, info.started_at,
             info.last_seen, info.busy, info.beat_interval, info.lease, info.pool,
             None if info.children is None else Jsonb(list(info.children)))))

    def worker_beat(self, worker_id: str, now: float, busy: int,
                    children: Sequence[tuple[int, str, int | None]] | None = None) -> bool:
        if children is None:
            return self._conns.run(lambda c, _again: c.execute(
                "UPDATE jobq_workers SET last_seen=%s, busy=%s WHERE id=%s",
                (now, busy, worker_id)).rowcount > 0)
        return self._conns.run(lambda c, _again: c.execute(
            "UPDATE jobq_workers SET last_seen=%s, busy=%s, children=%s WHERE id=%s",
            (now, busy, Jsonb(list(children)), worker_id)).rowcount > 0)

    def worker_deregister(self, worker_id: str) -> None:
        self._conns.run(lambda c, _again: c.execute(
            "DELETE FROM jobq_workers WHERE id=%s", (worker_id,)))

    def worker_forget(self, seen: Sequence[tuple[str, float]]) -> int:
        def op(c: psycopg.Connection, _again: bool) -> int:
            with c.transaction():
                return sum(c.execute("DELETE FROM jobq_workers WHERE id=%s AND last_seen=%s",
                                     item).rowcount for item in seen)
        return self._conns.run(op) if seen else 0

    def worker_list(self) -> list[WorkerInfo]:
        rows = self._conns.run(lambda c, _again: c.execute(
            "SELECT id, host, pid, queues, concurrency, started_at, last_seen, busy, "
            "beat_interval, lease, pool, children FROM jobq_workers ORDER BY id").fetchall())
        return [WorkerInfo(r[0], r[1], r[2], None if r[3] is None else tuple(r[3]), r[4], r[5],
                           r[6], r[7], r[8], r[9], r[10], worker_children(r[11])) for r in rows]

    # -- misc ---------------------------------------------------------------------------

    def server_clock(self) -> Clock:
        return self._clock

    def write_blockers(self) -> list[str]:
        return []  # row locks: a stopped worker blocks only its own rows

    def check(self) -> None:
        """Nothing to do: a server that goes away fails the next statement loudly (and
        the store reconnects), unlike a deleted SQLite file that stays readable."""

    def describe(self) -> dict[str, str | None]:
        return {"store": "postgresql", "postgresql": self.server_version, "url": self.display,
                "signal": "poll" if self.poll_only else "listen",
                "pool_size": str(self._conns.size), "synchronous": self.synchronous}

    def watch(self, *, poll_interval: float | None = None) -> PgWatch:
        """A change signal: LISTEN on a connection of its own, plus a snapshot poll every
        ``poll_interval`` seconds (the store's, 1 s by default), with jitter. Poll-only
        and read-only stores (the monitor's) poll only: no extra connection."""
        return PgWatch(self._conns, listen=not (self.poll_only or self.read_only),
                       poll_interval=poll_interval or self.poll_interval)

    def change_marker(self) -> str:
        """What the watch's poll reads: changes whenever a transaction on the server
        started writing or ended."""
        return self._conns.run(lambda c, _again: c.execute(SNAPSHOT).fetchone()[0])

    def integrity_check(self) -> str:
        """"ok", or what breaks jobq's invariants in the rows (the server checks its own
        storage): running jobs without a token or lease, finished jobs without an end."""
        checks = {
            "running jobs without a token or lease":
                "SELECT count(*) FROM jobq_jobs WHERE status='running' "
                "AND (token IS NULL OR lease_until IS NULL)",
            "finished jobs without finished_at":
                "SELECT count(*) FROM jobq_jobs WHERE status IN ('succeeded','dead','cancelled') "
                "AND finished_at IS NULL",
            "pending jobs holding a token":
                "SELECT count(*) FROM jobq_jobs WHERE status='pending' AND token IS NOT NULL",
        }

        def op(c: psycopg.Connection, _again: bool) -> list[str]:
            with _snapshot(c):
                return [f"{n} {what}" for what, q in checks.items()
                        if (n := c.execute(q).fetchone()[0])]

        problems = self._conns.run(op)
        return "; ".join(problems) if problems else "ok"

    def explain_claim(self, queues: Sequence[str] | None = None, limit: int = 1,
                      now: float = 0.0) -> list[str]:
        """The claim's query plan at time ``now`` (tests assert it uses the partial
        indexes). Plain EXPLAIN: EXPLAIN ANALYZE would claim."""
        queues = list(queues or [])
        params = {"now": now, "limit": limit, "lease": 0.0, "worker": "w", "locked": []}
        if len(queues) == 1:
            params["queue"] = queues[0]
        elif queues:
            params["queues"] = queues

        def op(c: psycopg.Connection, _again: bool) -> list[str]:
            return [r[0] for r in c.execute("EXPLAIN " + self._claim_shape(c, queues)[0], params)]

        return self._conns.run(op)

    def table_sizes(self) -> dict[str, int]:
        """Bytes on disk of each jobq table with its indexes and TOAST (for bloat checks)."""
        rows = self._conns.run(lambda c, _again: c.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid=c.relnamespace WHERE n.nspname=current_schema() "
            "AND c.relkind='r' AND c.relname LIKE 'jobq\\_%%'").fetchall())
        return dict(rows)

    def close(self) -> None:
        self._notifier.close()
        self._conns.close()


# -- helpers --------------------------------------------------------------------------------


class _snapshot:
    """One REPEATABLE READ, read-only transaction, so several counts agree."""

    def __init__(self, c: psycopg.Connection):
        self.c = c

    def __enter__(self):
        self.c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        return self.c

    def __exit__(self, *exc):
        self.c.execute("COMMIT" if exc[0] is None else "ROLLBACK")
        return False


def _own_identity(c: psycopg.Connection) -> tuple:
    """What ``app_connection.identity`` reads, on one of the store's own connections."""
    start, database, table, _host, _port = c.execute(app_connection.IDENTITY).fetchone()
    return (start, database, table)


def _refuse_if_maybe_committed(again: bool, display: str) -> None:
    if again:
        raise DatabaseUnavailable(
            f"{display}: the connection broke while jobs were being added; they may or may "
            "not have been added (check before enqueueing them again)")


def _complete(c: psycopg.Connection, completions: Sequence[Completion], now: float,
              again: bool) -> list[bool]:
    """Per completion, whether it was accepted (False: fenced out)."""
    if not completions:
        return []
    ids = [x.job_id for x in completions]
    tokens = [x.token for x in completions]
    if len(completions) == 1 and not again:
        x = completions[0]
        return [c.execute(sql.COMPLETE, (x.result, now, x.job_id, x.token)).rowcount == 1]
    done = {r[0] for r in c.execute(
        sql.COMPLETE_MANY, (now, ids, tokens, [x.result for x in completions])).fetchall()}
    if again:  # an earlier try may have committed: its completions count
        done |= {r[0] for r in c.execute(sql.COMPLETED_WITH, (ids, tokens)).fetchall()}
    accepted = []
    for x in completions:  # the same job twice in one batch: only the first is accepted
        accepted.append(x.job_id in done)
        done.discard(x.job_id)
    return accepted


def _attempt_recorded(c: psycopg.Connection, job_id: int, token: int) -> bool:
    return c.execute(sql.ATTEMPT_RECORDED, (job_id, token)).fetchone() is not None


def _leave_running(c: psycopg.Connection, job_id: int, token: int, attempts: int,
                   max_attempts: int, cancel: bool, now: float, retry_delay: RetryDelay,
                   error: str) -> Job:
    row = c.execute(sql.LEAVE_RUNNING, shared.leave_running_params(
        job_id, token, attempts, max_attempts, cancel, now, retry_delay, error)).fetchone()
    return job_from_row(row)  # the row is locked (RUNNING_ROW ... FOR UPDATE): it matched


__all__ = ["PostgresStore"]
