"""jobq's SQL for SQLite where it differs from the shared statements (``store/sql.py``).

The claim is one UPDATE under the file's write lock (its shape varies only with how many
queues are named, how many kinds have an attempt limit and whether it may start jobs of a
queue with key limits, never with data); a batch is
``executemany`` under one write lock; payloads over ``INLINE_PAYLOAD_MAX`` bytes live in
``jobq_payloads``, so every read of a payload goes through it.
"""
from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Mapping, Sequence

from ...common.checks import INT64_MAX
from ...common.db_health import DbHealth
from ...errors import JobqError, StorageFull
from ...types import Job, NewJob
from .. import claim, listing, sql
from ..controls import Controls
from ..dbapi import Row, one
from ..dialect import Dialect
from ..rows import CLAIM_FIELDS, decode
from .connection import SqliteConnection, SqliteCursor, write_transaction
from .schema import SCHEMA_VERSION, payload_is_big

_PAYLOAD = "coalesce(payload, (SELECT p.payload FROM jobq_payloads p WHERE p.job_id=jobq_jobs.id))"
_COLUMNS = {name: name for name in Job.__slots__} | {"payload": _PAYLOAD}
JOB_COLS = ", ".join(_COLUMNS[name] for name in Job.__slots__)
# Listings never load what they do not show (a payload may be megabytes).
JOB_COLS_LEAN = ", ".join("NULL" if name in ("payload", "result") else _COLUMNS[name]
                          for name in Job.__slots__)
CLAIM_RETURNING = ", ".join(_COLUMNS[name] for name in CLAIM_FIELDS)

INSERT_PAYLOAD = "INSERT INTO jobq_payloads(job_id, payload) VALUES (?, ?)"
DELETE_PAYLOADS = "DELETE FROM jobq_payloads WHERE job_id IN (SELECT value FROM json_each(?))"
MAX_ID = "SELECT max(id) FROM jobq_jobs"
LAST_ID = "SELECT last_insert_rowid()"
# A batch goes in as INSERTs of up to VALUES_ROWS rows each (then 32, 16, ... 1 for the
# rest: few distinct statements for the connection's cache). executemany runs the
# one-row statement's whole program once per row (9 cursors opened and closed each time);
# a statement of 64 rows opens them once: 36,400 -> 20,300 instructions a row
# (bench/store_instructions.py --only batch measures enqueue_many). 64 rows of INSERT's
# 10 parameters stay below SQLite's oldest limit of 999 parameters a statement.
VALUES_ROWS = 64


@functools.lru_cache(maxsize=32)
def _rows_of(statement: str, rows: int) -> str:
    """``statement``, a one-row ``INSERT ... VALUES (...)``, for ``rows`` rows."""
    head, row = statement.split(" VALUES ")
    return f"{head} VALUES {', '.join([row] * rows)}"

# The claim's parameters: ?1 lease, ?2 worker, ?3 now, ?4 limit, then the queue names, then
# a kind and its attempt limit per kind.
S = claim.Spelling(now="?3", limit="?4", lease="?1", worker="?2", token="random()",
                   least="min", greatest="max")
UNCONTROLLED = "queue NOT IN (SELECT name FROM jobq_queues)"


def _room(keyed: bool, q: str) -> str:
    """``claim.room`` of the queue named ``q``: the claim's limit for a queue without a row."""
    return f"coalesce((SELECT {claim.room(S, keyed)} FROM jobq_queues c WHERE c.name={q}), ?4)"


def _arm(q: int, keyed: bool) -> str:
    """Up to its room of ready jobs of the queue in parameter ``?q``: one seek on the
    per-queue index."""
    room = _room(keyed, f"?{q}")
    if keyed:
        return (f"SELECT * FROM (SELECT id, priority, run_at FROM "
                f"({claim.keyed_scan(S, f'j.queue=?{q}')}) {sql.ORDER_PENDING} LIMIT {room})")
    return f"SELECT * FROM ({claim.pending(S, f'queue=?{q}')} LIMIT {room})"


def _per_queue(keyed: bool) -> str:
    """A claim on every queue, per queue: one bounded seek per queue with pending jobs
    (``claim.QUEUES_PENDING``), cut to its room by a row number per queue (SQLite allows no
    LIMIT that depends on the row); ``keyed``: first cut per key, as ``claim.keyed_scan``."""
    scan = ("SELECT x.id FROM jobq_jobs x WHERE x.status='pending' AND x.queue=room.name AND "
            "x.run_at<=?3 " + (f"AND {sql.key_ok('x')} " if keyed else "")
            + "ORDER BY x.priority DESC, x.run_at, x.id LIMIT ?4")
    rows, t, n = f"room JOIN jobq_jobs j ON j.id IN ({scan}) WHERE room.n > 0", "j", "room.n"
    if keyed:
        rows = ("(SELECT j.id, j.priority, j.run_at, j.queue, j.key, room.n, row_number() OVER "
                "(PARTITION BY j.queue, j.key ORDER BY j.priority DESC, j.run_at, j.id) AS krn "
                f"FROM {rows}) s WHERE s.key IS NULL OR s.krn <= {sql.key_room('s', '?4')}")
        t, n = "s", "s.n"
    return (f"SELECT id FROM (SELECT {t}.id, {t}.priority, {t}.run_at, {n}, row_number() OVER "
            f"(PARTITION BY {t}.queue ORDER BY {t}.priority DESC, {t}.run_at, {t}.id) AS rn "
            f"FROM {rows}) WHERE rn <= n {sql.ORDER_PENDING} LIMIT ?4")


@functools.lru_cache(maxsize=64)
def claim_sql(n_queues: int, single: bool, per_queue: bool = False, n_limits: int = 0,
              keyed: bool = False) -> str:
    """The claim statement, one UPDATE under the write lock, from the rules of
    ``store/claim.py``. One queue is a seek on the per-queue index; several are merged
    from one bounded scan each, so no claim sorts the whole backlog. A claim on every
    queue is one ordered scan of the queues without controls, or (``per_queue``, while
    controlled queues have pending jobs: see ``controls``) ``_per_queue``. ``keyed``:
    each queue's scan carries the key filter. The rate window moves by the trigger
    ``jobq_rate_window`` (see ``store/claim.py``)."""
    prefix = ""
    if n_queues == 0 and not per_queue:
        pick = f"{claim.pending(S, UNCONTROLLED, 'id')} LIMIT ?4"
    elif n_queues == 0:
        prefix = (f"WITH RECURSIVE {claim.QUEUES_PENDING}, room(name, n) AS (SELECT name, "
                  f"{_room(keyed, 'qs.name')} FROM qs WHERE name IS NOT NULL) ")
        pick = _per_queue(keyed)
    elif n_queues == 1 and keyed:
        pick = (f"SELECT id FROM ({claim.keyed_scan(S, 'j.queue=?5')}) {sql.ORDER_PENDING} "
                f"LIMIT {_room(True, '?5')}")
    elif n_queues == 1:
        pick = f"{claim.pending(S, 'queue=?5', 'id')} LIMIT {_room(False, '?5')}"
    else:
        arms = [_arm(5 + i, keyed) for i in range(n_queues)]
        pick = f"SELECT id FROM ({' UNION ALL '.join(arms)}) {sql.ORDER_PENDING} LIMIT ?4"
    match = f"id=({pick})" if single else f"id IN ({pick})"
    first = 5 + n_queues  # the first kind's parameter number
    clamp = claim.clamp(S, "CASE kind " + "".join(
        f"WHEN ?{first + 2 * i} THEN ?{first + 2 * i + 1} " for i in range(n_limits))
        + "ELSE max_attempts END") if n_limits else ""
    return (f"{prefix}UPDATE jobq_jobs SET {claim.claimed(S, clamp)} WHERE {match} "
            f"RETURNING {CLAIM_RETURNING}")


class SqliteMatching(listing.Matching):
    pass  # listing.Matching is written in SQLite's spelling


_PAYLOAD_AT = NewJob._fields.index("payload")


def _inline(job: NewJob) -> tuple[object, ...]:
    """``job``'s INSERT parameters with its payload NULL: a big payload goes to
    ``jobq_payloads`` once the row has its id."""
    return (*job[:_PAYLOAD_AT], None, *job[_PAYLOAD_AT + 1:])


def _inserted_id(cursor: SqliteCursor) -> int:
    row_id = cursor.lastrowid
    assert row_id is not None  # an INSERT of one row without OR IGNORE sets it
    return row_id


class SqliteDialect(Dialect[SqliteConnection]):
    newest_schema = SCHEMA_VERSION
    FRAGMENTS = {
        "job_cols": JOB_COLS, "job_cols_lean": JOB_COLS_LEAN, "lock": "", "skip_locked": "",
        "names": "(SELECT value FROM json_each(?))", "ids": "(SELECT value FROM json_each(?))",
        "bucket_finished": "CAST((finished_at - ?) / ? AS INTEGER)",
        "bucket_ended": "CAST((ended_at - ?) / ? AS INTEGER)",
        "first_line": "substr(coalesce(error, ''), 1, "
                      "instr(coalesce(error, '') || char(10), char(10)) - 1)",
        "tail": "substr(coalesce(error, ''), -300)",
        "queue_list": "json_group_array(DISTINCT queue)",
    }
    MATCHING = SqliteMatching

    def list_param(self, values: Sequence[object]) -> str:
        return json.dumps(list(values))

    def json_param(self, value: object) -> str | None:
        return None if value is None else json.dumps(value)

    def read_list(self, value: object) -> object:
        return decode(value) if isinstance(value, str) else value

    read_json = read_list

    def claim(self, c: SqliteConnection, worker: str, queues: list[str], now: float,
              lease_until: float, limit: int, attempt_limits: Mapping[str, int] | None,
              controls: Controls) -> tuple[list[Row], bool]:
        limits = [v for kind_limit in (attempt_limits or {}).items() for v in kind_limit]
        per_queue = not queues and controls.busy
        query = claim_sql(len(queues), limit == 1, per_queue, len(limits) // 2,
                          controls.keyed_claim(queues, per_queue))
        rows = c.execute(query, [lease_until, worker, now, limit, *queues, *limits]).fetchall()
        return rows, not queues and not per_queue

    def insert_plain(self, c: SqliteConnection, jobs: Sequence[NewJob], now: float,
                     notify: list[str]) -> list[int]:
        if not jobs:
            return []
        # jobs here have no unique key (the engine inserts those one by one); without a key
        # or a trace context either, a job takes INSERT_BARE, which binds no None
        if len(jobs) == 1 and not payload_is_big(jobs[0].payload):  # one statement: no BEGIN
            job = jobs[0]
            if job.key is None and job.trace_context is None:
                return [_inserted_id(c.execute(sql.INSERT_BARE, (*job[:6], now)))]
            return [_inserted_id(c.execute(sql.INSERT, (*job, now)))]
        bare = all(job.key is None and job.trace_context is None for job in jobs)
        with write_transaction(c):
            values: list[object] = []  # every job's parameters, one after the other
            big: list[int] = []
            for i, job in enumerate(jobs):
                params: tuple[object, ...] = job
                if payload_is_big(job.payload):
                    big.append(i)
                    params = _inline(job)
                # NewJob's fields are in sql.INSERT's column order (INSERT_BARE's first six)
                values += params[:6] if bare else params
                values.append(now)
            ids = self._insert_rows(c, values, len(jobs),
                                    sql.INSERT_BARE if bare else sql.INSERT)
            for i in big:
                c.execute(INSERT_PAYLOAD, (ids[i], jobs[i].payload))
        return ids

    @staticmethod
    def _insert_rows(c: SqliteConnection, values: list[object], n: int,
                     statement: str) -> list[int]:
        """Insert ``n`` rows of ``statement`` (one row's INSERT) whose parameters follow
        one another in ``values``; their ids, in order."""
        # SQLite gives a new row max(id)+1, and a random unused id once the largest id is
        # taken (which another program may have written). Under the write lock, with room
        # below the largest id, the batch gets exactly the ids after the current maximum.
        top: int = one(c.execute(MAX_ID))[0] or 0
        if top > INT64_MAX - n:
            raise StorageFull(f"job ids are used up: the largest id is {top}, and SQLite would "
                              "give new jobs random ids that a pruned job may have had")
        width, done, rows = len(values) // n, 0, VALUES_ROWS
        while done < n:
            while rows > n - done:
                rows //= 2
            c.execute(_rows_of(statement, rows), values[done * width:(done + rows) * width])
            done += rows
        last: int = one(c.execute(LAST_ID))[0]
        if last != top + n:  # cannot happen by SQLite's rowid rule; never guess ids
            raise JobqError(f"batch insert got ids up to {last}, expected {top + n}")
        return list(range(top + 1, last + 1))

    # the default loops (completions, heartbeats, rows) under one write lock, one commit
    batch = staticmethod(write_transaction)

    def execute_many(self, c: SqliteConnection, statement: str, rows: Sequence[Row]) -> None:
        """sqlite3's ``executemany``: one statement prepared once for every row."""
        c.executemany(statement, rows)

    def insert_row(self, c: SqliteConnection, statement: str, job: NewJob,
                   now: float) -> Row | None:
        """A big payload goes to ``jobq_payloads`` once the row has its id."""
        if not payload_is_big(job.payload):
            return c.execute(statement, (*job, now)).fetchone()
        row = c.execute(statement, (*_inline(job), now)).fetchone()
        if row is not None:
            c.execute(INSERT_PAYLOAD, (row[0], job.payload))
        return row

    def prune_deletes(self) -> tuple[str, ...]:
        return (self.statements.DELETE_ATTEMPTS, self.statements.DELETE_DEPS, DELETE_PAYLOADS, self.statements.DELETE_JOBS)

    def health(self, c: SqliteConnection) -> DbHealth:
        pages, free, size = (one(c.execute(f"PRAGMA {name}"))[0]
                             for name in ("page_count", "freelist_count", "page_size"))
        return DbHealth("sqlite", time.time(), wal_bytes=_wal_bytes(c), free_pages=free,
                        page_count=pages, page_size=size)

    def tidy(self, c: SqliteConnection, table: str | None) -> bool:
        """Copy the WAL into the database and truncate it to nothing. A reader whose
        snapshot is older than the WAL's end stops any checkpoint short of it: then a
        PASSIVE checkpoint (it never waits) says so and nothing else is tried. Else
        TRUNCATE, which holds new writers back while it waits for the last readers, given
        ``TRUNCATE_WAIT`` ms at most instead of the connection's busy timeout."""
        busy, log, done = one(c.execute("PRAGMA wal_checkpoint(PASSIVE)"))
        if busy or done < log:
            return False
        timeout = one(c.execute("PRAGMA busy_timeout"))[0]
        c.execute(f"PRAGMA busy_timeout = {TRUNCATE_WAIT:d}")
        try:
            busy = one(c.execute("PRAGMA wal_checkpoint(TRUNCATE)"))[0]
        finally:
            c.execute(f"PRAGMA busy_timeout = {int(timeout):d}")
        return not busy


TRUNCATE_WAIT = 200  # ms: jobq's readers and writers hold the file for milliseconds


def _wal_bytes(c: SqliteConnection) -> int | None:
    """The size of the database's -wal file (None: in memory, or no such file)."""
    path = next((r[2] for r in c.execute("PRAGMA database_list").fetchall() if r[1] == "main"), "")
    try:
        return os.stat(path + "-wal").st_size if path else None
    except FileNotFoundError:
        return None


DIALECT = SqliteDialect()
