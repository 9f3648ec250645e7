"""jobq's SQL for SQLite: every statement the store runs that is worth a name.

Statements are fixed strings; every value is a bound parameter. The claim's shape varies
only with how many queues are named, never with data.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

from ...types import FINISHED, JobStatus
from ..base import ListFilter
from .rows import CLAIM_RETURNING

FENCE = "id=? AND status='running' AND token=?"
"""The fence every write for a running job carries: it changes the job only while it is
still running under the claim's token. Parameters: (job id, token)."""

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
COMPLETE = (
    "UPDATE jobq_jobs SET status='succeeded', result=?, finished_at=?, lease_until=NULL, "
    "cancel_requested=0 WHERE " + FENCE
)
EXTEND = (
    "UPDATE jobq_jobs SET lease_until=?, heartbeat_at=? "
    "WHERE " + FENCE + " RETURNING cancel_requested"
)
RECORD_ATTEMPT = (
    "INSERT INTO jobq_attempts(job_id, attempt, worker, token, started_at, ended_at, outcome, "
    "error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
# Status a job leaves "running" for, with the columns every such move resets.
LEAVE_RUNNING = (
    "UPDATE jobq_jobs SET status=?, run_at=?, attempts=?, error=coalesce(?, error), "
    "finished_at=?, lease_until=NULL, token=NULL, heartbeat_at=NULL, cancel_requested=0 "
    "WHERE " + FENCE
)
ORDER_PENDING = "ORDER BY priority DESC, run_at, id"

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
def claim_sql(n_queues: int, single: bool, per_queue: bool = False) -> str:
    """The claim statement. Its shape depends only on how many queues are named, never on
    data: queue names are bound parameters (?1 lease, ?2 worker, ?3 now, ?4 limit, then the
    names). One queue is a seek on the per-queue index; several are merged from one bounded
    scan each, so no claim sorts the whole backlog.

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
    return (
        f"{prefix}UPDATE jobq_jobs SET status='running', attempts=attempts+1, lease_until=?1, "
        "worker=?2, token=random(), started_at=?3, heartbeat_at=?3, progress=NULL, "
        f"progress_message=NULL WHERE {match} RETURNING {CLAIM_RETURNING}"
    )


def claim_params(queues: Sequence[str], now: float, limit: int, lease_until: float,
                 worker: str) -> list:
    return [lease_until, worker, now, limit, *queues]


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
SCHEDULE_JOB = "UPDATE jobq_schedules SET last_job=? WHERE key=?"


REVIVE = (
    "UPDATE jobq_jobs SET status='pending', run_at=?, attempts=0, finished_at=NULL, "
    "lease_until=NULL, token=NULL, cancel_requested=0, progress=NULL, progress_message=NULL"
)



LIST_ORDER = {
    JobStatus.PENDING: ORDER_PENDING[len("ORDER BY "):],
    "scheduled": "run_at, id",
    "retrying": "run_at, id",
    JobStatus.RUNNING: "lease_until, id",
}



def list_conditions(where: ListFilter, now: float) -> tuple[list[str], list, str]:
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
        if status in FINISHED:  # true for them anyway; lets SQLite use the finished index
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
        order = LIST_ORDER.get(status, "finished_at DESC, id DESC")
    return conds, params, order



RUNNING_ROW = (
    "SELECT attempts, max_attempts, worker, started_at, cancel_requested FROM jobq_jobs "
    "WHERE " + FENCE
)
PROGRESS = "UPDATE jobq_jobs SET progress=?, progress_message=? WHERE " + FENCE
