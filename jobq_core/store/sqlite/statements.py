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



@functools.lru_cache(maxsize=64)
def claim_sql(n_queues: int, single: bool, n_limits: int = 0) -> str:
    """The claim statement. Its shape depends only on how many queues are named and how
    many kinds have an attempt limit, never on data: names are bound parameters. One
    queue is a seek on the per-queue index; several are merged from one bounded scan each,
    so no claim sorts the whole backlog. A kind's attempt limit clamps ``max_attempts``
    (parameters: kind, limit per kind, after the lease and worker)."""
    if n_queues == 0:
        pick = f"SELECT id FROM jobq_jobs WHERE status='pending' AND run_at<=? {ORDER_PENDING} LIMIT ?"
    elif n_queues == 1:
        pick = (
            "SELECT id FROM jobq_jobs WHERE status='pending' AND queue=? AND run_at<=? "
            f"{ORDER_PENDING} LIMIT ?"
        )
    else:
        arm = (
            "SELECT * FROM (SELECT id, priority, run_at FROM jobq_jobs WHERE status='pending' "
            f"AND queue=? AND run_at<=? {ORDER_PENDING} LIMIT ?)"
        )
        pick = f"SELECT id FROM ({' UNION ALL '.join([arm] * n_queues)}) {ORDER_PENDING} LIMIT ?"
    match = f"id=({pick})" if single else f"id IN ({pick})"
    clamp = ("max_attempts=CASE kind " + "WHEN ? THEN min(max_attempts, ?) " * n_limits
             + "ELSE max_attempts END, ") if n_limits else ""
    return (
        "UPDATE jobq_jobs SET status='running', attempts=attempts+1, lease_until=?, worker=?, "
        f"{clamp}token=random(), started_at=?, heartbeat_at=?, progress=NULL, "
        f"progress_message=NULL WHERE {match} RETURNING {CLAIM_RETURNING}"
    )


def claim_params(queues: Sequence[str], now: float, limit: int) -> list:
    if len(queues) <= 1:
        return [*queues, now, limit]
    params: list = []
    for q in queues:
        params += [q, now, limit]
    return [*params, limit]


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



SEARCH = (
    "(instr(lower(kind), lower(?)) > 0 OR instr(lower(queue), lower(?)) > 0 "
    "OR instr(lower(coalesce(worker, '')), lower(?)) > 0 "
    "OR instr(lower(coalesce(error, '')), lower(?)) > 0 OR CAST(id AS TEXT)=?)"
)
"""A free word of a search: in the kind, queue, worker or error (ASCII case folded), or the
id. Parameters: the word, five times. No index helps: it scans the rows the other
conditions leave until the listing's LIMIT of them match."""


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
        if value is None:
            continue
        if where.prefix and column != "worker":
            conds.append(f"substr({column}, 1, length(?))=?")  # a prefix
            params += [value] * 2
        else:
            conds.append(f"{column}=?")
            params.append(value)
    for word in where.search:
        conds.append(SEARCH)
        params += [word] * 5
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
