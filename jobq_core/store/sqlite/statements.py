"""jobq's SQL for SQLite: every statement the store runs that is worth a name.

Statements are fixed strings; every value is a bound parameter. The claim's shape varies
only with how many queues are named, never with data. What both stores share is written
once in ``store/statements.py`` and named here in SQLite's dialect.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

from .. import statements as shared
from ..base import ListFilter
from .rows import CLAIM_RETURNING

FENCE = shared.fence(shared.SQLITE)
"""The fence every write for a running job carries (``store.statements.fence``).
Parameters: (job id, token)."""

INSERT = (
    "INSERT INTO jobq_jobs(kind, payload, queue, priority, run_at, max_attempts, unique_key, "
    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
# On an application's connection (app_connection.py): ids from RETURNING, and a unique
# key that is live already skips the row instead of failing the caller's transaction.
INSERT_RETURNING = INSERT + " RETURNING id"
INSERT_UNIQUE = (
    INSERT + " ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL "
    "AND status IN ('pending','running') DO NOTHING RETURNING id"
)
LIVE_WITH_KEY = "SELECT id FROM jobq_jobs WHERE unique_key=? AND status IN ('pending','running')"
COMPLETE = shared.complete(shared.SQLITE)
EXTEND = (
    "UPDATE jobq_jobs SET lease_until=?, heartbeat_at=? "
    "WHERE " + FENCE + " RETURNING cancel_requested"
)
RECORD_ATTEMPT = shared.record_attempt(shared.SQLITE)
LEAVE_RUNNING = shared.leave_running(shared.SQLITE)
PROGRESS = shared.progress(shared.SQLITE)
REVIVE = shared.revive(shared.SQLITE)
ORDER_PENDING = shared.ORDER_PENDING
RUNNING_ROW = (
    "SELECT attempts, max_attempts, worker, started_at, cancel_requested FROM jobq_jobs "
    "WHERE " + FENCE
)

# Reads that must stay cheap however many finished jobs pile up (tests check their plans).
# Also leases jobq never grants (none, or past the longest lease from now, or not a
# number, which SQLite sorts after every number): another program wrote them.
EXPIRED_LEASES = (
    "SELECT id, token, attempts, max_attempts, worker, started_at, lease_until, "
    "cancel_requested FROM jobq_jobs WHERE status='running' "
    "AND (lease_until<? OR lease_until IS NULL OR lease_until>?) LIMIT ?"
)
# A job moved to dead because jobq cannot read one of its columns; the row keeps the value.
QUARANTINE = (
    "UPDATE jobq_jobs SET status='dead', error=?, finished_at=?, lease_until=NULL, "
    "token=NULL, heartbeat_at=NULL, cancel_requested=0 WHERE " + FENCE
)
PENDING_BY_QUEUE, RUNNING_BY_QUEUE, DEAD_BY_QUEUE, RECENT_FINISHED = shared.stats_reads(
    shared.SQLITE)


# How many more jobs of queue ``?{q}`` a claim may start now (parameters: ?3 now, ?4 the
# claim's limit): the claim's limit for a queue without controls (no row), 0 while it is
# paused, else what its concurrency limit (minus its running jobs, counted here, in the
# claim's own statement under the write lock) and its rate window leave. Never negative:
# SQLite reads a negative LIMIT as none.
ROOM = (
    "coalesce((SELECT CASE WHEN c.paused THEN 0 ELSE max(0, min(?4, "
    "CASE WHEN c.concurrency IS NULL THEN ?4 ELSE c.concurrency - (SELECT count(*) "
    "FROM jobq_jobs r WHERE r.status='running' AND r.queue=c.name) END, "
    "CASE WHEN c.rate_limit IS NULL THEN ?4 "
    "WHEN c.window_start IS NULL OR c.window_start + c.rate_per <= ?3 THEN c.rate_limit "
    "ELSE c.rate_limit - c.window_count END)) END "
    "FROM jobq_queues c WHERE c.name=?{q}), ?4)"
)
# Queues without controls: those with none of jobq_queues' rows.
UNCONTROLLED = "queue NOT IN (SELECT name FROM jobq_queues)"
# What ``controls.ControlCache`` reads: (name, limited, has pending jobs) per controlled queue.
CONTROL_STATE = (
    "SELECT name, NOT paused AND (concurrency IS NOT NULL OR rate_limit IS NOT NULL), "
    "EXISTS (SELECT 1 FROM jobq_jobs j WHERE j.status='pending' AND j.queue=c.name) "
    "FROM jobq_queues c"
)
# The queues with pending jobs, one index seek each (a loose scan of the per-queue index),
# each with its room: the per-queue claim on every queue starts from these.
_QUEUES_WITH_ROOM = (
    "WITH RECURSIVE qs(name) AS (SELECT (SELECT min(queue) FROM jobq_jobs "
    "WHERE status='pending') UNION ALL SELECT (SELECT min(queue) FROM jobq_jobs "
    "WHERE status='pending' AND queue>qs.name) FROM qs WHERE qs.name IS NOT NULL), "
    "room(name, n) AS (SELECT name, " + ROOM.replace("?{q}", "qs.name") + " FROM qs "
    "WHERE name IS NOT NULL) "
)


def _arm(q: int) -> str:
    """Up to ROOM ready jobs of the queue in parameter ``?q``: one seek on the per-queue index."""
    return ("SELECT * FROM (SELECT id, priority, run_at FROM jobq_jobs WHERE status='pending' "
            f"AND queue=?{q} AND run_at<=?3 {ORDER_PENDING} LIMIT {ROOM.format(q=q)})")


@functools.lru_cache(maxsize=64)
def claim_sql(n_queues: int, single: bool, per_queue: bool = False, n_limits: int = 0) -> str:
    """The claim statement. Its shape depends only on how many queues are named and how
    many kinds have an attempt limit, never on data: names are bound parameters (?1 lease,
    ?2 worker, ?3 now, ?4 limit, then the queue names, then a kind and its attempt limit
    per kind). One queue is a seek on the per-queue index; several are merged from one
    bounded scan each, so no claim sorts the whole backlog. A kind's attempt limit clamps
    ``max_attempts``.

    Pause and limits are enforced here, in the statement, under the write lock: a named
    queue's arm takes at most its ROOM. A claim on every queue is either one ordered scan
    of the queues without controls, or (``per_queue``, while controlled queues have
    pending jobs: see ``controls``) one bounded seek per queue with pending jobs, each
    cut to the queue's room (SQLite allows no LIMIT that depends on the row, so the cut
    is a row number per queue)."""
    prefix = ""
    if n_queues == 0 and not per_queue:
        pick = (f"SELECT id FROM jobq_jobs WHERE status='pending' AND run_at<=?3 "
                f"AND {UNCONTROLLED} {ORDER_PENDING} LIMIT ?4")
    elif n_queues == 0:
        prefix = _QUEUES_WITH_ROOM
        pick = (
            "SELECT id FROM (SELECT j.id, j.priority, j.run_at, room.n, row_number() OVER "
            "(PARTITION BY j.queue ORDER BY j.priority DESC, j.run_at, j.id) AS rn FROM room "
            "JOIN jobq_jobs j ON j.id IN (SELECT x.id FROM jobq_jobs x WHERE "
            "x.status='pending' AND x.queue=room.name AND x.run_at<=?3 "
            "ORDER BY x.priority DESC, x.run_at, x.id LIMIT ?4) WHERE room.n > 0) "
            f"WHERE rn <= n {ORDER_PENDING} LIMIT ?4"
        )
    elif n_queues == 1:
        pick = (
            "SELECT id FROM jobq_jobs WHERE status='pending' AND queue=?5 AND run_at<=?3 "
            f"{ORDER_PENDING} LIMIT {ROOM.format(q=5)}"
        )
    else:
        arms = [_arm(5 + i) for i in range(n_queues)]
        pick = f"SELECT id FROM ({' UNION ALL '.join(arms)}) {ORDER_PENDING} LIMIT ?4"
    match = f"id=({pick})" if single else f"id IN ({pick})"
    first = 5 + n_queues  # the first kind's parameter number
    clamp = ("max_attempts=CASE kind " + "".join(
        f"WHEN ?{first + 2 * i} THEN min(max_attempts, ?{first + 2 * i + 1}) "
        for i in range(n_limits)) + "ELSE max_attempts END, ") if n_limits else ""
    return (
        f"{prefix}UPDATE jobq_jobs SET status='running', attempts=attempts+1, lease_until=?1, "
        f"worker=?2, {clamp}token=random(), started_at=?3, heartbeat_at=?3, progress=NULL, "
        f"progress_message=NULL WHERE {match} RETURNING {CLAIM_RETURNING}"
    )


def claim_params(queues: Sequence[str], now: float, limit: int, lease_until: float,
                 worker: str, limits: Sequence = ()) -> list:
    """``limits``: kind, attempt limit, kind, attempt limit, ..."""
    return [lease_until, worker, now, limit, *queues, *limits]


# -- queue controls and schedules ---------------------------------------------------------

QUEUE_CONTROLS = ("SELECT name, paused, concurrency, rate_limit, rate_per FROM jobq_queues "
                  "ORDER BY name")
PAUSE = (
    "INSERT INTO jobq_queues(name, paused, updated_at) VALUES (?, ?, ?) "
    "ON CONFLICT (name) DO UPDATE SET paused=excluded.paused, updated_at=excluded.updated_at"
)
# A new limit keeps the current rate window (the count of jobs it started) when the
# window length is the same: re-setting a limit never grants a fresh burst.
SET_LIMIT = (
    "INSERT INTO jobq_queues(name, concurrency, rate_limit, rate_per, updated_at) "
    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
    "concurrency=excluded.concurrency, rate_limit=excluded.rate_limit, "
    "window_start=CASE WHEN rate_per IS excluded.rate_per THEN window_start END, "
    "window_count=CASE WHEN rate_per IS excluded.rate_per THEN window_count ELSE 0 END, "
    "rate_per=excluded.rate_per, updated_at=excluded.updated_at"
)
# A queue with no control left has no row (its claims skip nothing).
DROP_UNCONTROLLED = ("DELETE FROM jobq_queues WHERE name=? AND NOT paused "
                     "AND concurrency IS NULL AND rate_limit IS NULL")
SCHEDULES = ("SELECT key, kind, queue, every, cron, tz, last_tick, last_job, updated_at "
             "FROM jobq_schedules ORDER BY key")
SCHEDULE_REGISTER = (
    "INSERT INTO jobq_schedules(key, kind, queue, every, cron, tz, last_tick, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING"
)
# The tick is ours only if no worker recorded it (or a later one) first.
SCHEDULE_TICK = (
    "UPDATE jobq_schedules SET last_tick=?, updated_at=? "
    "WHERE key=? AND (last_tick IS NULL OR last_tick<?)"
)
SCHEDULE_FORGET = "DELETE FROM jobq_schedules WHERE key=?"
SCHEDULE_JOB = "UPDATE jobq_schedules SET last_job=? WHERE key=?"


def list_conditions(where: ListFilter, now: float) -> tuple[list[str], list, str]:
    return shared.list_conditions(shared.SQLITE, where, now)
