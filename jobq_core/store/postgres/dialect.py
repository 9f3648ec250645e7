"""jobq's SQL for PostgreSQL where it differs from the shared statements (``store/sql.py``).

Batches travel as arrays (``unnest``), so a batch of any size is one statement and one
round trip. The claim passes other claims' rows (``FOR UPDATE SKIP LOCKED``) and, for
queues with a concurrency or rate limit, first locks those queues' rows so that two
claims can never both take a queue's last slot.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol, cast

import psycopg
from psycopg import errors as pgerrors
from psycopg.abc import Params
from psycopg.types.json import Jsonb

from ...common.db_health import DbHealth, TableHealth
from ...types import Job, NewJob
from .. import claim, listing, sql
from ..base import Completion
from ..controls import Controls
from ..dbapi import Row, one
from ..dialect import Dialect
from ..rows import CLAIM_FIELDS
from .schema import SCHEMA_VERSION

JOB_COLS = ", ".join(Job.__slots__)
# Listings leave payload and result unread (a payload may be megabytes).
JOB_COLS_LEAN = ", ".join("NULL" if name in ("payload", "result") else name
                          for name in Job.__slots__)
CLAIM_RETURNING = ", ".join(f"j.{name}" for name in CLAIM_FIELDS)
CLAIM_NAMES = ", ".join(CLAIM_FIELDS)
NOTIFY_CHANNEL = "jobq"
ENDED_CHANNEL = "jobq_ended"
NAMED_MOST = 300
"""An ended-jobs notification names at most this many jobs (its payload stays well under
PostgreSQL's 8,000 bytes); one that ended more names none: look at every awaited job."""


class PgConnection(Protocol):
    """What the PostgreSQL dialect uses of a connection: the store's own
    ``psycopg.Connection`` or an application's, through ``app_connection.AppCursor``."""

    @property
    def info(self) -> psycopg.ConnectionInfo: ...

    def execute(self, query: str, params: Params | None = ..., /) -> psycopg.Cursor[Row]: ...

    def cursor(self) -> psycopg.Cursor[Row]: ...

    def transaction(self) -> AbstractContextManager[object]: ...

def _notify_and_ids(queues: str) -> str:
    """The end of both insert statements: the pg_notify of the queues due one (the array
    parameter ``queues``), run with the insert (referencing ``sent`` makes PostgreSQL run
    it: an unreferenced SELECT CTE is skipped), and the new ids."""
    return ("sent AS (SELECT pg_notify('" + NOTIFY_CHANNEL + "', q) FROM unnest(" + queues
            + "::text[]) AS q) SELECT id FROM ins WHERE (SELECT count(*) FROM sent) >= 0")


# One statement for a batch of any size; ids come from the identity in row order, and the
# pg_notify of the queues due one (see ``notify.Notifier``) is sent when the insert commits.
# Arrays travel in binary (%b): psycopg dumps a list of 1,000 values in about half the
# instructions it takes for text (bench/store_instructions.py --pg-url ... --only batch:
# 61,912 -> 32,661 a job), and the server reads them without parsing.
INSERT_MANY = (
    "WITH ins AS (INSERT INTO jobq_jobs(kind, payload, queue, priority, run_at, max_attempts, "
    "unique_key, key, trace_context, created_at) "
    "SELECT k, p, q, pr, r, m, NULL, ky, tc, %(now)s FROM unnest(%(kind)b::text[], "
    "%(payload)b::text[], %(queue)b::text[], %(priority)b::bigint[], %(run_at)b::float8[], "
    "%(max_attempts)b::bigint[], %(key)b::text[], %(trace)b::text[]) "
    "WITH ORDINALITY AS v(k, p, q, pr, r, m, ky, tc, n) ORDER BY n RETURNING id), "
    + _notify_and_ids("%(notify)s")
)
# One job (an enqueue call): the same statement with plain values, which psycopg sends
# with less work than eight one-element arrays; its parameters are a NewJob's fields in
# order, then the time and the queues to notify.
INSERT_ONE = (
    "WITH ins AS (INSERT INTO jobq_jobs(kind, payload, queue, priority, run_at, max_attempts, "
    "unique_key, key, trace_context, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, "
    "%s) RETURNING id), " + _notify_and_ids("%s")
)
NOTIFY = "SELECT pg_notify('" + NOTIFY_CHANNEL + "', q) FROM unnest(%s::text[]) AS q"

# Whether anyone waits: a watch of ended jobs (``PgWatch`` on ENDED_CHANNEL) keeps the
# key WAITERS_KEY of jobq_meta a little in the future, the server's epoch second as text
# (compared as text, 10 digits until 2286: a value written by hand fails no completion).
# Completions notify only while it is: with nobody waiting, a batch costs a primary-key
# read of jobq_meta instead of a NOTIFY, whose commit takes a lock every notifying
# transaction of the cluster queues on. The single completion through the API costs
# 1.5 % more instructions with its condition (the guard's drain workload, callgrind).
WAITERS_KEY = "waiters_until"
_NOW = "extract(epoch FROM now())::int8"
WAITING = ("INSERT INTO jobq_meta(key, value) VALUES ('" + WAITERS_KEY + "', (" + _NOW
           + "+%s)::text) ON CONFLICT (key) DO UPDATE SET value = greatest(jobq_meta.value, "
           "excluded.value)")
"""Someone waits for ended jobs for the next %s seconds (``PgWatch``, ended-jobs mode)."""
WAITED = f"EXISTS(SELECT FROM jobq_meta WHERE key='{WAITERS_KEY}' AND value>={_NOW}::text)"
ENDED = "SELECT pg_notify('" + ENDED_CHANNEL + "', %s) WHERE " + WAITED
"""Jobs ended outside the completion statements (dead, cancelled): ``PostgresDialect.ended``."""


def announce(ended: str) -> str:
    """The CTE ``ends``: while someone waits (``WAITED``), one pg_notify on ENDED_CHANNEL
    naming the ids of the rows of the CTE ``ended`` (its column ``id``); none when it has
    no row. A statement runs it by referencing it (``ANNOUNCED``, in the WHERE of a select
    from ``ended``), and the notification goes out when the statement's transaction
    commits: every batch of completions tells the waiters (``Queue.wait``) in the round
    trip that writes it, and a job costs no statement of its own."""
    return (f"ends AS (SELECT pg_notify('{ENDED_CHANNEL}', CASE WHEN count(*) <= {NAMED_MOST} "
            f"THEN string_agg(id::text, ',') ELSE '' END) FROM {ended} "
            f"HAVING count(*) > 0 AND {WAITED})")


ANNOUNCED = "(SELECT count(*) FROM ends) >= 0"
NAMED = f"(NOT {WAITED} OR pg_notify('{ENDED_CHANNEL}',id::text) IS NOT NULL)"
"""``announce`` for the single completion, as the last condition of its UPDATE (void is
not NULL: the condition holds). A row the other conditions refuse may be named too: a
waiter then reads its job once for nothing."""


def _completing(now: str, ids: str, tokens: str, results: str) -> str:
    """The fenced completions of a batch, each parameter an array (ids, tokens, results)."""
    return ("UPDATE jobq_jobs j SET status='succeeded', result=v.result, "
            f"finished_at={now}, lease_until=NULL, cancel_requested=false FROM unnest("
            f"{ids}::bigint[], {tokens}::bigint[], {results}::text[]) AS v(id, token, result) "
            "WHERE " + sql.fence("j", "v.id", "v.token"))


COMPLETE_MANY = ("WITH done AS (" + _completing("%s", "%s", "%s", "%s")
                 + " RETURNING j.id, j.has_dependents), " + announce("done")
                 + " SELECT id, has_dependents FROM done WHERE " + ANNOUNCED)
# The same for the jobs nothing waits on, as a step of the claim (``claim_sql``'s
# ``completing``): jobs that others wait on need their dependents settled in the
# transaction that completes them, the usual way
_COMPLETE_UNWAITED = (_completing("%(now)s", "%(ids)s", "%(tokens)s", "%(results)s")
                      + " AND NOT j.has_dependents RETURNING j.id")
# A batch the completing claim cannot write whole (a job others wait on, one fenced out,
# the same job twice): the statement claims nothing and then fails, so that its
# completions roll back with it and the engine writes the batch in one transaction. A
# completing claim that committed part of a batch left the caller, when the rest then
# failed, with completions it did not know were written and claims it never received.
# (The error's text depends on the count: a constant one would be raised at planning.)
SPLIT = "jobq: a batch the completing claim cannot write whole"
_WHOLE = "(SELECT count(*) FROM done) = %(n)s::bigint"
_SPLIT = (f"SELECT ('{SPLIT}: ' || count(*) || ' of ' || %(n)s::bigint)::bigint"
          f"{', NULL' * (len(CLAIM_FIELDS) - 1)} FROM done HAVING count(*) <> %(n)s::bigint")
# After a connection broke mid-commit: which of these completions did commit? (A
# succeeded job keeps the token of the claim that completed it.)
COMPLETED_WITH = (
    "SELECT j.id, j.has_dependents FROM jobq_jobs j JOIN unnest(%s::bigint[], %s::bigint[]) AS v(id, token) "
    "ON j.id=v.id AND j.token=v.token WHERE j.status='succeeded'"
)
EXTEND_MANY = (
    "UPDATE jobq_jobs j SET lease_until=%s, heartbeat_at=%s "
    "FROM unnest(%s::bigint[], %s::bigint[]) AS v(id, token) "
    "WHERE " + sql.fence("j", "v.id", "v.token") + " RETURNING j.id, j.cancel_requested"
)

P = claim.Spelling(now="%(now)s", limit="%(limit)s", lease="%(lease)s", worker="%(worker)s",
                   token="nextval('jobq_tokens')", least="LEAST", greatest="GREATEST")


def _room(keyed: bool) -> str:
    """``claim.room`` of the queue row ``c`` (NULL columns when the queue has none: the
    claim's limit). %(locked)s: the limited queues whose rows the claim's transaction
    locked first (LOCK_LIMITED); a limited queue whose row it did not lock (limited since
    the store last looked, see ``controls``) gets none this time, rather than a count
    another claim may race."""
    return claim.room(P, keyed, first="WHEN c.name IS NULL THEN %(limit)s ",
                      last=f"WHEN {claim.LIMITED} AND NOT (c.name = ANY(%(locked)s::text[])) "
                           "THEN 0 ")


# Before a claim that may start jobs of limited queues: lock their rows, in the claim's
# transaction, so that concurrent claims of those queues take turns. (The claim statement
# then starts after the other's commit, with a snapshot that sees the jobs it started; a
# lock taken inside the claim statement would leave its snapshot older than the lock.)
# A queue with key limits is limited: its lock is the per-key lock too (coarse, exact:
# claims of the queue take turns, each counting the running jobs of every key it starts).
LOCK_LIMITED = (
    "SELECT name FROM jobq_queues WHERE name = ANY(%s) AND (concurrency IS NOT NULL OR "
    f"rate_limit IS NOT NULL OR {sql.KEYED}) ORDER BY name FOR UPDATE"
)
SKIP = " FOR UPDATE SKIP LOCKED"
# The queue's scan in a claim that names it (``q.name``, its row ``c``), within its room;
# keyed: ``claim.keyed_scan`` (rows locked as they are passed), cut per key inside the
# LATERAL, then to the queue's room, as the SQLite statement does.
_ARM = claim.pending(P, "queue=q.name") + f" LIMIT {_room(False)}{SKIP}"
_KEYED_ARM = (claim.keyed_scan(P, "j.queue=q.name", SKIP)
              + f" ORDER BY s.priority DESC, s.run_at, s.id LIMIT {_room(True)}")
# queue || '': statistics cannot see through it. On the column itself, when every job is
# in one queue (n_distinct 1), the planner takes any "queue <> x" to match nothing and
# sorts the whole pending index for each claim: 3,000 claims/s fell to 20 with 800,000
# pending once analyzed.
UNCONTROLLED = "(queue || '') <> ALL(ARRAY(SELECT name FROM jobq_queues))"
_CLAMP = claim.clamp(P, "coalesce((SELECT l.n FROM unnest(%(lkinds)s::text[], "
                        "%(llimits)s::bigint[]) AS l(kind, n) WHERE l.kind = j.kind), "
                        "j.max_attempts)")
# The rate windows of the queues it started jobs of move in the same statement.
_WINDOWS = ("win AS (UPDATE jobq_queues w SET " + claim.window_move("w", "%(now)s", "n.started")
            + " FROM (SELECT queue, count(*) AS started FROM claimed GROUP BY queue) n "
            "WHERE w.name = n.queue AND w.rate_limit IS NOT NULL) ")


@functools.lru_cache(maxsize=64)
def claim_sql(n_queues: int, per_queue: bool = False, clamped: bool = False,
              keyed: bool = False, completing: bool = False) -> str:
    """The claim: one statement, from the rules of ``store/claim.py``. ``FOR UPDATE SKIP
    LOCKED`` lets concurrent claims pass each other's rows instead of waiting; the
    MATERIALIZED CTE pins the picked ids (a planner may otherwise rerun a LIMIT subquery
    per row and update more than asked). Parameters: %(now)s %(limit)s %(lease)s
    %(worker)s %(locked)s, and %(queue)s or %(queues)s; ``clamped``: %(lkinds)s and
    %(llimits)s, kinds whose attempt limit clamps ``max_attempts``.

    Each named queue is scanned for at most its room (one bounded scan per queue,
    LATERAL, merged). A claim on every queue is either one ordered scan of the pending
    index leaving out the queues with controls, or (``per_queue``, while controlled queues
    have pending jobs: see ``controls``) one bounded scan per queue with pending jobs.
    ``keyed``: each queue's scan is ``_KEYED_ARM``.

    ``completing``: the statement first completes a worker's finished jobs that nothing
    waits on (``done``: %(ids)s %(tokens)s %(results)s, %(n)s of them), so that the batch
    and the next claim take one round trip and one commit. All of the batch or nothing:
    when ``done`` accepts fewer than %(n)s, the claim takes no job and the statement fails
    (``SPLIT``), rolling the completions back. A completion's row comes back after the
    claimed ones: its id, NULL for the rest (a claimed job's kind is never NULL). Both
    steps see the snapshot the statement started with: no claim can see a completion's
    effect, which is why only a claim that locks no queue's row first (no limits to count)
    is ever written this way (``PostgresDialect.complete_and_claim``)."""
    recursive = ""
    if n_queues == 0 and not per_queue:
        pick = f"{claim.pending(P, UNCONTROLLED, 'id')} LIMIT %(limit)s{SKIP}"
    else:
        if n_queues == 0:
            recursive = f"RECURSIVE {claim.QUEUES_PENDING}, "
            names = "qs q WHERE q.name IS NOT NULL"
        elif n_queues == 1:
            names = "(SELECT %(queue)s::text AS name) q"
        else:
            names = "unnest(%(queues)s::text[]) AS q(name)"
        pick = (
            "SELECT p.id FROM (SELECT q.name FROM " + names + ") q LEFT JOIN jobq_queues c "
            "ON c.name = q.name CROSS JOIN LATERAL (" + (_KEYED_ARM if keyed else _ARM) + ") p"
            + ("" if n_queues == 1 else
               " ORDER BY p.priority DESC, p.run_at, p.id LIMIT %(limit)s")
        )
    done = f"done AS ({_COMPLETE_UNWAITED}), {announce('done')}, " if completing else ""
    return (
        f"WITH {recursive}{done}picked AS MATERIALIZED ({pick}), "
        f"claimed AS (UPDATE jobq_jobs j SET {claim.claimed(P, _CLAMP if clamped else '')} "
        # = ANY(ARRAY(...)): a primary-key lookup per picked id, whatever the estimates
        f"WHERE {_WHOLE + ' AND ' if completing else ''}"
        f"j.id = ANY(ARRAY(SELECT id FROM picked)) RETURNING {CLAIM_RETURNING}), "
        f"{_WINDOWS}SELECT {CLAIM_NAMES} FROM claimed"
        + (f" UNION ALL SELECT id{', NULL' * (len(CLAIM_FIELDS) - 1)} FROM done"
           f" WHERE {ANNOUNCED} UNION ALL {_SPLIT}" if completing else "")
    )


def claim_params(queues: list[str], now: float, limit: int, lease_until: float, worker: str,
                 attempt_limits: Mapping[str, int] | None = None) -> dict[str, object]:
    params: dict[str, object] = {"now": now, "limit": limit, "lease": lease_until, "worker": worker, "locked": "{}"}
    if len(queues) == 1:
        params["queue"] = queues[0]
    elif queues:
        params["queues"] = text_array(queues)
    if attempt_limits:
        params["lkinds"] = text_array(attempt_limits)
        params["llimits"] = int_array(attempt_limits.values())
    return params


def claim_shape(queues: list[str], controls: Controls, clamped: bool = False,
                completing: bool = False) -> tuple[str, list[str], bool]:
    """The claim statement for ``queues`` (see ``controls``), the limited queues it may
    start jobs of (their rows are locked before it runs), and whether it is the plain
    claim on every queue."""
    per_queue = not queues and controls.busy
    if queues:
        limited = [q for q in queues if q in controls.limited]
    else:
        limited = list(controls.limited) if per_queue else []
    keyed = controls.keyed_claim(queues, per_queue)
    return (claim_sql(len(queues), per_queue, clamped, keyed, completing), limited,
            not queues and not per_queue)


class PostgresMatching(listing.Matching):
    contains = "strpos(error, ?) > 0"
    starts = "starts_with({column}, ?)"
    starts_n = 1
    within = "strpos(lower(coalesce({column}, '')), lower(?)) > 0"
    id_text = "id::text"


class PostgresDialect(Dialect[PgConnection]):
    PLACEHOLDER = "%s"
    newest_schema = SCHEMA_VERSION
    FRAGMENTS = {
        "job_cols": JOB_COLS, "job_cols_lean": JOB_COLS_LEAN, "lock": " FOR UPDATE", "skip_locked": " FOR UPDATE SKIP LOCKED",
        "names": "(SELECT unnest(?::text[]))", "ids": "(SELECT unnest(?::bigint[]))",
        "bucket_finished": "floor((finished_at - ?) / ?)::bigint",
        "bucket_ended": "floor((ended_at - ?) / ?)::bigint",
        "first_line": "split_part(coalesce(error, ''), E'\\n', 1)",
        "tail": "right(coalesce(error, ''), 300)",
        "queue_list": "array_agg(DISTINCT queue)",
    }
    MATCHING = PostgresMatching
    completes_in_claim = True

    def __init__(self) -> None:
        super().__init__()
        # A single completion announces itself too (``NAMED``), on the store's
        # connection and on an application's.
        st = self.statements
        st.COMPLETE += " AND " + NAMED
        st.COMPLETE_SETTLING = (f"WITH done AS ({st.COMPLETE_SETTLING}, id), "
                                f"{announce('done')} SELECT has_dependents FROM done "
                                f"WHERE {ANNOUNCED}")

    def ended(self, c: PgConnection, job_ids: Sequence[int]) -> None:
        if job_ids:
            c.execute(ENDED, (",".join(map(str, job_ids[:NAMED_MOST]))
                              if len(job_ids) <= NAMED_MOST else "",))

    def list_param(self, values: Sequence[object]) -> list[object]:
        return list(values)

    def json_param(self, value: object) -> Jsonb | None:
        return None if value is None else Jsonb(value)

    def read_list(self, value: object) -> object:
        return value

    read_json = read_list

    def claim(self, c: PgConnection, worker: str, queues: list[str], now: float,
              lease_until: float, limit: int, attempt_limits: Mapping[str, int] | None,
              controls: Controls) -> tuple[list[Row], bool]:
        params = claim_params(queues, now, limit, lease_until, worker, attempt_limits)
        query, limited, plain = claim_shape(queues, controls, bool(attempt_limits))
        if not limited:
            return c.execute(query, params).fetchall(), plain
        if c.info.transaction_status:  # inside job_complete_and_claim's transaction
            params["locked"] = text_array([r[0] for r in c.execute(LOCK_LIMITED, (limited,))])
            return c.execute(query, params).fetchall(), plain
        with c.transaction():  # autocommit, idle: the lock needs a transaction of its own
            params["locked"] = text_array([r[0] for r in c.execute(LOCK_LIMITED, (limited,))])
            return c.execute(query, params).fetchall(), plain

    def insert_plain(self, c: PgConnection, jobs: Sequence[NewJob], now: float,
                     notify: list[str]) -> list[int]:
        if not jobs:
            return []
        if len(jobs) == 1:
            return [one(c.execute(INSERT_ONE, (*jobs[0], now, text_array(notify))))[0]]
        rows = c.execute(INSERT_MANY, {
            "now": now, "kind": [j.kind for j in jobs], "payload": [j.payload for j in jobs],
            "queue": [j.queue for j in jobs], "priority": [j.priority for j in jobs],
            "run_at": [j.run_at for j in jobs], "max_attempts": [j.max_attempts for j in jobs],
            # no array when no job has a key (or a trace context): unnest pads it with NULLs
            "key": [j.key for j in jobs] if any(j.key is not None for j in jobs) else None,
            "trace": ([j.trace_context for j in jobs]
                      if any(j.trace_context is not None for j in jobs) else None),
            "notify": text_array(notify),
        }).fetchall()
        return sorted(r[0] for r in rows)  # ids follow the batch's order

    def complete_and_claim(self, c: PgConnection, completions: Sequence[Completion],
                           now: float, worker: str, queues: list[str], lease_until: float,
                           limit: int, attempt_limits: Mapping[str, int] | None,
                           controls: Controls) -> tuple[set[int], list[Row], bool] | None:
        query, limited, plain = claim_shape(queues, controls, bool(attempt_limits), True)
        if limited:  # their rows are locked before the claim: a transaction, the usual way
            return None
        params = claim_params(queues, now, limit, lease_until, worker, attempt_limits)
        params["ids"], params["tokens"], params["results"] = _completion_arrays(completions)
        params["n"] = len(completions)
        try:
            got = c.execute(query, params).fetchall()
        except pgerrors.InvalidTextRepresentation as e:
            if SPLIT not in str(e):
                raise
            return None  # nothing written: the batch goes in a transaction
        accepted: set[int] = set()
        rows: list[Row] = []
        for row in got:
            if row[1] is None:  # a completion's (see claim_sql)
                accepted.add(row[0])
            else:
                rows.append(row)
        return accepted, rows, plain

    # complete_many and extend_many: one statement over arrays, where Dialect's loop sends
    # a statement and a commit per job: a worker's batch of 8 is 1 round trip and 1 commit
    # instead of 8 and 8. On the tests' cluster (loopback, fsync off) both took 0.6 ms at
    # best and 1 to 8 ms in the median for a batch of 8 (300 batches each, alternated,
    # on a shared two-core machine): what the override saves is the 7 round trips and 7
    # commits a batch cost on a server across a network.
    def complete_many(self, c: PgConnection, completions: Sequence[Completion], now: float,
                      again: bool) -> dict[int, bool]:
        ids, tokens, results = _completion_arrays(completions)
        done: dict[int, bool] = dict(c.execute(COMPLETE_MANY, (now, ids, tokens, results)).fetchall())
        if again:  # an earlier try may have committed: its completions count (their
            # dependents were settled by that commit)
            done.update((job_id, False) for job_id, _ in c.execute(
                COMPLETED_WITH, (ids, tokens)).fetchall() if job_id not in done)
        return done

    def execute_many(self, c: PgConnection, statement: str, rows: Sequence[Row]) -> None:
        with c.cursor() as cursor:  # pipelined by psycopg: one round trip for the lot
            cursor.executemany(statement, rows)

    def extend_many(self, c: PgConnection, leases: list[tuple[int, int]], now: float,
                    lease_until: float) -> list[tuple[int, object]]:
        rows = c.execute(EXTEND_MANY, (lease_until, now, int_array([i for i, _ in leases]),
                                       int_array([t for _, t in leases]))).fetchall()
        return cast(list[tuple[int, object]], rows)  # RETURNING j.id, j.cancel_requested

    def health(self, c: PgConnection) -> DbHealth:
        tables = {r[0]: TableHealth(*r[1:]) for r in c.execute(TABLE_HEALTH).fetchall()}
        row = c.execute(OLDEST_TRANSACTION).fetchone()
        assert row is not None  # aggregates without GROUP BY: one row
        return DbHealth("postgresql", row[0], tables, row[1], row[2])

    def tidy(self, c: PgConnection, table: str | None) -> bool:
        # SKIP_LOCKED: an autovacuum (or another VACUUM) under way on it is enough; without
        # it this would wait for that one to end, up to the session's lock_timeout.
        c.execute(f"VACUUM (ANALYZE, SKIP_LOCKED) {table}")  # a name checked by the engine
        return True


# jobq's tables' dead and live rows, when vacuum last ran on each, whether autovacuum may
# (the server's setting, and no autovacuum_enabled=off on the table), and whether this
# session's role may VACUUM it: the table's or the database's owner, or a superuser.
TABLE_HEALTH = (
    "SELECT s.relname, s.n_dead_tup, s.n_live_tup, extract(epoch FROM s.last_vacuum)::float8, "
    "extract(epoch FROM s.last_autovacuum)::float8, current_setting('autovacuum')::bool AND "
    "NOT EXISTS (SELECT FROM unnest(c.reloptions) o "
    "WHERE o ~* '^autovacuum_enabled=(f|false|off|no|0)$'), "
    "pg_has_role(c.relowner, 'USAGE') OR pg_has_role((SELECT datdba FROM pg_database "
    "WHERE datname = current_database()), 'USAGE') "
    "FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid "
    "WHERE s.schemaname = current_schema() AND s.relname LIKE 'jobq\\_%' ORDER BY 1")
# The oldest transaction of another session of this database that holds back what vacuum
# may remove (one with a transaction id or a snapshot: an idle session's BEGIN holds
# nothing until it reads). Sessions of other roles show only to a role with
# pg_read_all_stats (or a superuser).
OLDEST_TRANSACTION = (
    "SELECT extract(epoch FROM clock_timestamp())::float8, extract(epoch FROM "
    "clock_timestamp() - min(xact_start))::float8, current_setting('autovacuum')::bool "
    "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
    "AND backend_type = 'client backend' "
    "AND (backend_xid IS NOT NULL OR backend_xmin IS NOT NULL)")


# Short arrays travel as array literals in a text parameter: psycopg dumps a str in C,
# where a list goes through its Python list dumper (finding the element type, then
# dumping each element), which cost a worker's batch of 8 completions more than the rest
# of its parameters together (bench/store_instructions.py --pg-url ... --only drain8).
# Long arrays (INSERT_MANY's) stay binary lists, cheaper per element. NOTIFY's list of
# queues goes the same way, from every caller.

def int_array(values: Iterable[int]) -> str:
    """``values`` (Python ints, as jobq's ids and tokens are) as an array literal."""
    return "{" + ",".join(map(str, values)) + "}"


def text_array(values: Iterable[str | None]) -> str:
    """``values`` as an array literal: each string quoted (a backslash before each ``\\``
    and ``"``, so that commas, braces, spaces and the word NULL stay text), None as NULL."""
    return "{" + ",".join("NULL" if v is None else
                          '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
                          for v in values) + "}"


def _completion_arrays(completions: Sequence[Completion]) -> tuple[str, str, str]:
    """A batch's ids, tokens and results, the arrays a completing statement takes."""
    return (int_array([x.job_id for x in completions]),
            int_array([x.token for x in completions]),
            text_array([x.result for x in completions]))


DIALECT = PostgresDialect()

