"""jobq's SQLite schema and its forward migrations.

``MIGRATIONS[n]`` takes a database from schema version n to n+1. The version lives in the
``jobq_meta`` table, and also in ``PRAGMA user_version`` when jobq owns the file (it had no
other tables when jobq first set it up): an application that adds jobq's tables to its own
database keeps its ``user_version`` for itself.

Indexes are partial so that claim, reap and stats cost the same with a million finished
jobs in the table as with none.
"""
from __future__ import annotations

import sqlite3

from collections.abc import Callable

from ...errors import DatabaseError
from .. import opening
from ..claim import window_move

PAGE_SIZE = 1024  # for files jobq creates: a job row is small, and every commit writes whole
#                   pages to the WAL, so small pages make each claim and completion cheaper
INLINE_PAYLOAD_MAX = 500  # bytes of JSON kept in the job row; bigger goes to jobq_payloads


def payload_is_big(payload: str) -> bool:
    """Whether the payload goes to jobq_payloads (over ``INLINE_PAYLOAD_MAX`` bytes)."""
    n = len(payload)  # characters; UTF-8 needs 1 to 4 bytes for each
    return n > INLINE_PAYLOAD_MAX or (
        n * 4 > INLINE_PAYLOAD_MAX and len(payload.encode()) > INLINE_PAYLOAD_MAX)
TABLES = ("jobq_meta", "jobq_jobs", "jobq_attempts", "jobq_payloads", "jobq_workers",
          "jobq_queues", "jobq_schedules", "jobq_deps", "jobq_leader")

_V1 = """
CREATE TABLE jobq_meta(
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE jobq_jobs(
  id               INTEGER PRIMARY KEY,  -- never reused: prune keeps the newest job
  kind             TEXT    NOT NULL,
  queue            TEXT    NOT NULL,
  payload          TEXT,                               -- JSON; NULL: in jobq_payloads
  priority         INTEGER NOT NULL DEFAULT 0,
  status           TEXT    NOT NULL DEFAULT 'pending'
                   CHECK (status IN ('pending','running','succeeded','dead','cancelled')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  max_attempts     INTEGER NOT NULL,
  run_at           REAL    NOT NULL,
  lease_until      REAL,
  worker           TEXT,
  token            INTEGER,                            -- fencing token of the current claim
  result           TEXT,                               -- JSON
  error            TEXT,                               -- last error, full text
  created_at       REAL    NOT NULL,
  started_at       REAL,
  finished_at      REAL,
  heartbeat_at     REAL,
  unique_key       TEXT,
  progress         REAL,
  progress_message TEXT,
  cancel_requested INTEGER NOT NULL DEFAULT 0
);

-- claim (all queues), pending counts
CREATE INDEX jobq_jobs_pending ON jobq_jobs(priority DESC, run_at, id)
  WHERE status = 'pending';
-- claim (named queues); covers per-queue counts, retries and lag
CREATE INDEX jobq_jobs_pending_queue
  ON jobq_jobs(queue, priority DESC, run_at, id, attempts, status) WHERE status = 'pending';
-- reap, running list
CREATE INDEX jobq_jobs_running ON jobq_jobs(lease_until) WHERE status = 'running';
-- recent throughput, dead/cancelled lists, prune
CREATE INDEX jobq_jobs_finished ON jobq_jobs(status, finished_at)
  WHERE finished_at IS NOT NULL;
-- dead counts per queue and kind, read by every stats() and monitor refresh
CREATE INDEX jobq_jobs_dead ON jobq_jobs(queue, kind, status) WHERE status = 'dead';
-- at most one live job per unique key
CREATE UNIQUE INDEX jobq_jobs_unique ON jobq_jobs(unique_key)
  WHERE unique_key IS NOT NULL AND status IN ('pending', 'running');

-- Attempts that ended without success. The job row itself describes its latest attempt
-- while it runs and once it succeeded, so the common path writes no history row.
CREATE TABLE jobq_attempts(
  seq        INTEGER PRIMARY KEY,
  job_id     INTEGER NOT NULL,
  attempt    INTEGER NOT NULL,
  worker     TEXT,
  token      INTEGER,
  started_at REAL,
  ended_at   REAL    NOT NULL,
  outcome    TEXT    NOT NULL,
  error      TEXT
);
CREATE INDEX jobq_attempts_job ON jobq_attempts(job_id);
CREATE INDEX jobq_attempts_ended ON jobq_attempts(ended_at);

-- Payloads too big to keep in the job row. SQLite rewrites a whole row, overflow pages
-- included, on every update, so a big inline payload would be copied again by each claim,
-- heartbeat and completion; kept here, it is written once.
CREATE TABLE jobq_payloads(
  job_id  INTEGER PRIMARY KEY,
  payload TEXT    NOT NULL
);

CREATE TABLE jobq_workers(
  id          TEXT PRIMARY KEY,
  host        TEXT    NOT NULL,
  pid         INTEGER NOT NULL,
  queues      TEXT,                                    -- JSON list, NULL: every queue
  concurrency INTEGER NOT NULL,
  started_at  REAL    NOT NULL,
  last_seen   REAL    NOT NULL,
  busy        INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
"""

# v2: each worker records its heartbeat interval and lease term, so that it is judged late
# or lost by its own interval, whatever the monitor assumes (NULL: an older worker).
_V2 = """
ALTER TABLE jobq_workers ADD COLUMN beat_interval REAL;
ALTER TABLE jobq_workers ADD COLUMN lease REAL;
"""

# v3: operator controls per queue (pause, concurrency and rate limits), read by the claim
# statement itself, and periodic schedules with the latest tick each one enqueued.
# A queue has a row only while it is paused or limited: the claim of other queues pays
# one probe of an empty (or tiny) table. The rate window is counted by a trigger on the
# claim's own update (``claim.window_move``: see ``store/claim.py`` for why a trigger), so
# it moves in the claim's statement whichever process claims. v3 made the trigger for good,
# and it fired on every claim and every completion, limit or not: about 1 % of a job's
# instructions (tests/perf) with no rate limit anywhere. From v7 it exists only while some
# queue has a rate limit: ``rate_trigger`` makes or drops it in the transaction that sets
# or clears a limit.
RATE_TRIGGER = f"""CREATE TRIGGER IF NOT EXISTS jobq_rate_window AFTER UPDATE OF status ON jobq_jobs
  WHEN new.status = 'running' AND old.status = 'pending'
BEGIN
  UPDATE jobq_queues SET {window_move("", "new.started_at", "1")}
  WHERE name = new.queue AND rate_limit IS NOT NULL;
END;
"""
_V3 = """
CREATE TABLE jobq_queues(
  name         TEXT PRIMARY KEY,
  paused       INTEGER NOT NULL DEFAULT 0,
  concurrency  INTEGER,                                -- NULL: no concurrency limit
  rate_limit   INTEGER,                                -- jobs started per window; NULL: none
  rate_per     REAL,                                   -- the window, seconds
  window_start REAL,                                   -- when the current window opened
  window_count INTEGER NOT NULL DEFAULT 0,             -- jobs started in it
  updated_at   REAL    NOT NULL
) WITHOUT ROWID;

""" + RATE_TRIGGER + """
CREATE TABLE jobq_schedules(
  key        TEXT PRIMARY KEY,
  kind       TEXT    NOT NULL,
  queue      TEXT    NOT NULL,
  every      REAL,                                     -- seconds between ticks, or
  cron       TEXT,                                     -- a cron expression
  tz         TEXT,
  last_tick  REAL,                                     -- latest tick recorded
  last_job   INTEGER,                                  -- the job it enqueued
  updated_at REAL    NOT NULL
) WITHOUT ROWID;
"""

# v4: the pool a worker runs its handlers in, and (a process pool's) each child's state,
# written by the worker's beat: for `jobq workers` and the monitor's Workers view.
_V4 = """
ALTER TABLE jobq_workers ADD COLUMN pool TEXT;
ALTER TABLE jobq_workers ADD COLUMN children TEXT;
"""

# v5: job dependencies. A job enqueued ``after`` others waits in the new status
# ``waiting`` (outside the pending indexes, so claims never see it) until they end; the
# edges live in jobq_deps, and a job with dependents is flagged so that its end settles
# them in the same transaction while a job without pays nothing.
_V5 = """
ALTER TABLE jobq_jobs ADD COLUMN has_dependents INTEGER NOT NULL DEFAULT 0;

CREATE TABLE jobq_deps(
  job_id       INTEGER NOT NULL,                       -- the job that waits
  depends_on   INTEGER NOT NULL,                       -- on this one
  allow_failed INTEGER NOT NULL DEFAULT 0,             -- runs whatever the end of depends_on
  PRIMARY KEY (job_id, depends_on)
) WITHOUT ROWID;
CREATE INDEX jobq_deps_depends_on ON jobq_deps(depends_on);

-- waiting counts per queue (stats, the monitor's header)
CREATE INDEX jobq_jobs_waiting ON jobq_jobs(queue) WHERE status = 'waiting';
"""
_OLD_STATUSES = "'succeeded','dead','cancelled')"


def _v5(c: sqlite3.Connection) -> None:
    """Let the status CHECK take ``waiting`` (see ``_edit_table_sql``)."""
    _edit_table_sql(c, _OLD_STATUSES, "'succeeded','dead','cancelled','waiting')")
    for statement in _split_statements(_V5):
        c.execute(statement)


# v6: concurrency keys. A job's ``key`` (NULL: none) and a queue's key limits, read by the
# claim: at most ``key_concurrency`` running jobs per key, or (``ordered``) one at a time
# in id order. One partial index makes the claim's checks probes: the running jobs of a
# key, and its open jobs in id order. A job without a key is not in it (its WHERE tests
# the key first: a write of a job without one looks no further). One index, not one per
# check: each partial index costs every write of a job's status (claim, completion)
# about 1 % of a job's instructions, key or not (tests/perf).
_V6 = """
ALTER TABLE jobq_jobs ADD COLUMN key TEXT;
ALTER TABLE jobq_queues ADD COLUMN key_concurrency INTEGER;
ALTER TABLE jobq_queues ADD COLUMN ordered INTEGER NOT NULL DEFAULT 0;

CREATE INDEX jobq_jobs_key ON jobq_jobs(queue, key, status, id)
  WHERE key IS NOT NULL AND status IN ('pending','running','waiting');
"""


HAS_RATE_LIMIT = "SELECT 1 FROM jobq_queues WHERE rate_limit IS NOT NULL LIMIT 1"


def rate_trigger(c: sqlite3.Connection) -> None:
    """The rate window's trigger, there exactly while some queue has a rate limit."""
    if c.execute(HAS_RATE_LIMIT).fetchone():
        c.execute(RATE_TRIGGER)
    else:
        c.execute("DROP TRIGGER IF EXISTS jobq_rate_window")


# v8: the W3C trace context of the span that enqueued a job (``Job.trace_context``), written
# only while tracing is on, so that each run's span continues the enqueue's trace. NULL
# for every job before (adding a column without a default rewrites no row).
_V8 = """
ALTER TABLE jobq_jobs ADD COLUMN trace_context TEXT;
"""


# v9: the status CHECK and the key index's WHERE spelled as equalities instead of IN lists.
# SQLite evaluates an IN list of three or more constants by building a temporary table,
# each time: the CHECK on every insert and every status change, the key index's WHERE
# twice on every status change (old row, new row), each table a b-tree opened, created
# and closed. Instructions a job (callgrind, tests/perf/instr_child.py, 2,000 jobs) with
# the IN lists and with equalities: enqueue 108,685 -> 74,946, claim + complete
# 421,374 -> 318,067, a Worker's drain 277,579 -> 223,584. The constraint is the same, so
# the CHECK is edited in place as in v5; the index is built again (only jobs with a key).
_IN_CHECK = "status IN ('pending','running','succeeded','dead','cancelled','waiting')"
_EQ_CHECK = " OR ".join(f"status='{s}'" for s in (
    "pending", "running", "succeeded", "dead", "cancelled", "waiting"))
_V9_KEY_INDEX = """
DROP INDEX IF EXISTS jobq_jobs_key;
CREATE INDEX jobq_jobs_key ON jobq_jobs(queue, key, status, id)
  WHERE key IS NOT NULL AND (status='pending' OR status='running' OR status='waiting');
"""


def _v9(c: sqlite3.Connection) -> None:
    table = c.execute("SELECT sql FROM sqlite_master WHERE type='table' "
                      "AND name='jobq_jobs'").fetchone()[0]
    if _EQ_CHECK not in table:  # (a database put back to an older version has it already)
        _edit_table_sql(c, _IN_CHECK, _EQ_CHECK)
    for statement in _split_statements(_V9_KEY_INDEX):
        c.execute(statement)


# v10: a waiting job's ``unmet``, how many of its dependencies are not met yet, so that the
# end of each dependency decrements it instead of counting every edge of the waiting job
# (a group's fan-in cost N counts of N edges: 10,000 members took 31.9 s, under the write
# lock). Filled here for the jobs already waiting, from their edges. A worker of an older
# jobq still running writes no ``unmet``: a job it makes wait keeps 0, which the first
# settling finds at or below 0 and counts over the edges (``sql.RECOUNT``) before it
# releases anything; a dependency it completes leaves the count one too high, and the
# reaper's sweep (counting over the edges) releases that job within a pass.
_V10_COUNT = """
UPDATE jobq_jobs SET unmet=(SELECT count(*) FROM jobq_deps d JOIN jobq_jobs x
  ON x.id=d.depends_on WHERE d.job_id=jobq_jobs.id AND x.status<>'succeeded'
  AND (NOT d.allow_failed OR (x.status<>'dead' AND x.status<>'cancelled')))
  WHERE status='waiting'
"""


def _v10(c: sqlite3.Connection) -> None:
    columns = {r[1] for r in c.execute("PRAGMA table_info(jobq_jobs)")}
    if "unmet" not in columns:  # (a database put back to an older version has it already)
        c.execute("ALTER TABLE jobq_jobs ADD COLUMN unmet INTEGER NOT NULL DEFAULT 0")
    c.execute(_V10_COUNT)


def _edit_table_sql(c: sqlite3.Connection, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in jobq_jobs's CREATE TABLE, for a constraint made looser
    or spelled differently: SQLite cannot alter a CHECK, and its documented way, leaving
    every stored row as it is, is to edit the table's SQL in sqlite_master and bump the
    schema cookie (in the caller's write transaction, so another connection sees the old
    schema or the new one)."""
    version = c.execute("PRAGMA schema_version").fetchone()[0]
    c.execute("PRAGMA writable_schema=ON")
    try:
        changed = c.execute("UPDATE sqlite_master SET sql=replace(sql, ?, ?) WHERE "
                            "type='table' AND name='jobq_jobs' AND instr(sql, ?) > 0",
                            (old, new, old)).rowcount
        c.execute(f"PRAGMA schema_version={version + 1:d}")
    finally:
        c.execute("PRAGMA writable_schema=OFF")
    if changed != 1:
        raise DatabaseError("jobq_jobs has a status CHECK jobq did not write; not migrated")


# v11: the maintenance leader's lease (``store/ops/upkeep.py``): one row per role.
_V11 = """
CREATE TABLE IF NOT EXISTS jobq_leader(
  name       TEXT PRIMARY KEY,
  worker     TEXT NOT NULL,
  elected_at REAL NOT NULL,
  expires_at REAL NOT NULL
) WITHOUT ROWID;
"""

MIGRATIONS: list[str | Callable[[sqlite3.Connection], None]] = [
    _V1, _V2, _V3, _V4, _v5, _V6, rate_trigger, _V8, _v9, _v10, _V11]
SCHEMA_VERSION = len(MIGRATIONS)


def installed_version(c: sqlite3.Connection, path: str) -> int:
    """jobq's schema version in this file (``opening.installed_version``)."""
    names = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    return opening.installed_version(path, TABLES, names, opening.meta_reader(c, sqlite3.Error),
                                     SCHEMA_VERSION)


def migrate(c: sqlite3.Connection) -> None:
    """Bring jobq's tables to ``SCHEMA_VERSION``. Run inside a write transaction: the
    version is read again under the write lock, as another process may have migrated."""
    names = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "jobq_meta" in names:
        version = int(c.execute(
            "SELECT value FROM jobq_meta WHERE key='schema_version'").fetchone()[0])
        owns = c.execute("SELECT 1 FROM jobq_meta WHERE key='owns_user_version'").fetchone()
    else:
        version = 0
        others = [n for n in names if not n.startswith("sqlite_")]
        owns = not others and c.execute("PRAGMA user_version").fetchone()[0] == 0
    for script in MIGRATIONS[version:]:
        if callable(script):
            script(c)
            continue
        for statement in _split_statements(script):
            c.execute(statement)
    c.execute(opening.MARK, opening.mark(SCHEMA_VERSION))
    if owns:
        c.execute("INSERT OR REPLACE INTO jobq_meta VALUES ('owns_user_version', '1')")
        c.execute(f"PRAGMA user_version={SCHEMA_VERSION:d}")


def _split_statements(script: str) -> list[str]:
    """Split a migration script into statements (executescript would commit on its own)."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    return [s for s in out if s]
