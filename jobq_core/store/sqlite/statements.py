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


def list_conditions(where: ListFilter, now: float) -> tuple[list[str], list, str]:
    return shared.list_conditions(shared.SQLITE, where, now)
