"""jobq's SQL for PostgreSQL: every statement the store runs that is worth a name.

Statements are fixed strings; every value is a bound parameter. Batches travel as arrays
(``unnest``), so a batch of any size is one statement and one round trip. What both stores
share is written once in ``store/statements.py`` and named here in PostgreSQL's dialect.
"""
from __future__ import annotations

import functools

from ...types import Job
from .. import statements as shared
from ..base import ListFilter
from ..rows import CLAIM_FIELDS

D = shared.POSTGRES


def fence(table: str = "", job_id: str | None = None, token: str | None = None) -> str:
    """The fence every write for a running job carries (``store.statements.fence``)."""
    return shared.fence(D, table, job_id, token)


FENCE = fence()


JOB_COLS = ", ".join(Job.__slots__)
# Listings leave payload and result unread (a payload may be megabytes).
JOB_COLS_LEAN = ", ".join("NULL" if name in ("payload", "result") else name
                          for name in Job.__slots__)
CLAIM_RETURNING = ", ".join(f"j.{name}" for name in CLAIM_FIELDS)
NOTIFY_CHANNEL = "jobq"

# One statement for a batch of any size; ids come from the identity in row order, and the
# pg_notify of the queues due one (see ``notify.Notifier``) is sent when the insert commits.
INSERT_MANY = (
    "WITH ins AS (INSERT INTO jobq_jobs(kind, payload, queue, priority, run_at, max_attempts, "
    "unique_key, created_at) "
    "SELECT k, p, q, pr, r, m, NULL, %(now)s FROM unnest(%(kind)s::text[], %(payload)s::text[], "
    "%(queue)s::text[], %(priority)s::bigint[], %(run_at)s::float8[], %(max_attempts)s::bigint[]) "
    "WITH ORDINALITY AS v(k, p, q, pr, r, m, n) ORDER BY n RETURNING id), "
    "sent AS (SELECT pg_notify('" + NOTIFY_CHANNEL + "', q) FROM unnest(%(notify)s::text[]) AS q) "
    # referencing ``sent`` makes PostgreSQL run it (an unreferenced SELECT CTE is skipped)
    "SELECT id FROM ins WHERE (SELECT count(*) FROM sent) >= 0"
)
INSERT_UNIQUE = (
    "INSERT INTO jobq_jobs(kind, payload, queue, priority, run_at, max_attempts, unique_key, "
    "created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND status IN ('pending','running') "
    "DO NOTHING RETURNING id"
)
COPY_IN = (
    "INSERT INTO jobq_jobs(kind, payload, queue, priority, run_at, max_attempts, unique_key, "
    "created_at, status, attempts, error, finished_at) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND status IN ('pending','running') "
    "DO NOTHING RETURNING id"
)
LIVE_WITH_KEY = "SELECT id FROM jobq_jobs WHERE unique_key=%s AND status IN ('pending','running')"
NOTIFY = "SELECT pg_notify('" + NOTIFY_CHANNEL + "', q) FROM unnest(%s::text[]) AS q"

COMPLETE_MANY = (
    "UPDATE jobq_jobs j SET status='succeeded', result=v.result, finished_at=%s, "
    "lease_until=NULL, cancel_requested=false "
    "FROM unnest(%s::bigint[], %s::bigint[], %s::text[]) AS v(id, token, result) "
    "WHERE " + fence("j", "v.id", "v.token") + " RETURNING j.id"
)
# One completion (a worker's usual batch outside a burst): a plain fenced update is
# cheaper for the server than a join with unnest.
COMPLETE = shared.complete(D)
# After a connection broke mid-commit: which of these completions did commit? (A
# succeeded job keeps the token of the claim that completed it.)
COMPLETED_WITH = (
    "SELECT j.id FROM jobq_jobs j JOIN unnest(%s::bigint[], %s::bigint[]) AS v(id, token) "
    "ON j.id=v.id AND j.token=v.token WHERE j.status='succeeded'"
)
EXTEND_MANY = (
    "UPDATE jobq_jobs j SET lease_until=%s, heartbeat_at=%s "
    "FROM unnest(%s::bigint[], %s::bigint[]) AS v(id, token) "
    "WHERE " + fence("j", "v.id", "v.token") + " RETURNING j.id, j.cancel_requested"
)
RUNNING_ROW = (
    "SELECT attempts, max_attempts, worker, started_at, cancel_requested, queue FROM jobq_jobs "
    "WHERE " + fence() + " FOR UPDATE"
)
RECORD_ATTEMPT = shared.record_attempt(D)
ATTEMPT_RECORDED = "SELECT outcome FROM jobq_attempts WHERE job_id=%s AND token=%s"
# Status a job leaves "running" for, with the columns every such move resets; the row as
# it is afterwards.
LEAVE_RUNNING = shared.leave_running(D) + f" RETURNING {JOB_COLS}"
PROGRESS = shared.progress(D)

# The reaper: expired leases, locked so that a completion or another reaper racing it
# either finishes first (the row is no longer running when we read it) or waits.
EXPIRED_LEASES = (
    "SELECT id, token, attempts, max_attempts, worker, started_at, lease_until, "
    "cancel_requested, queue FROM jobq_jobs WHERE status='running' AND lease_until<%s "
    "LIMIT %s FOR UPDATE SKIP LOCKED"
)
REAP_MANY = (
    "UPDATE jobq_jobs j SET status=v.status, run_at=v.run_at, error=v.error, "
    "finished_at=v.finished, lease_until=NULL, token=NULL, heartbeat_at=NULL, "
    "cancel_requested=false "
    "FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::float8[], %s::text[], %s::float8[]) "
    "AS v(id, token, status, run_at, error, finished) "
    "WHERE " + fence("j", "v.id", "v.token") + " AND j.lease_until<%s RETURNING j.id"
)
RECORD_ATTEMPTS = (
    "INSERT INTO jobq_attempts(job_id, attempt, worker, token, started_at, ended_at, outcome, "
    "error) SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::bigint[], "
    "%s::float8[], %s::float8[], %s::text[], %s::text[])"
)

ORDER_PENDING = shared.ORDER_PENDING


@functools.lru_cache(maxsize=8)
def claim_sql(n_queues: int, limited: bool = False) -> str:
    """The claim: one statement. ``FOR UPDATE SKIP LOCKED`` lets concurrent claims pass
    each other's rows instead of waiting; the MATERIALIZED CTE pins the picked ids (a
    planner may otherwise rerun a LIMIT subquery per row and update more than asked).
    No queue, or one, is one ordered scan of a partial index; several are one bounded scan
    per queue (LATERAL), merged. Parameters: %(now)s %(limit)s %(lease)s %(worker)s, and
    %(queue)s or %(queues)s; ``limited``: %(lkinds)s and %(llimits)s, kinds whose attempt
    limit clamps ``max_attempts``."""
    if n_queues <= 1:
        where = "status='pending' AND run_at<=%(now)s" + (" AND queue=%(queue)s" if n_queues else "")
        pick = (f"SELECT id FROM jobq_jobs WHERE {where} {ORDER_PENDING} LIMIT %(limit)s "
                "FOR UPDATE SKIP LOCKED")
    else:
        pick = (
            "SELECT p.id FROM unnest(%(queues)s::text[]) AS q(name) CROSS JOIN LATERAL ("
            "SELECT id, priority, run_at FROM jobq_jobs WHERE status='pending' AND queue=q.name "
            f"AND run_at<=%(now)s {ORDER_PENDING} LIMIT %(limit)s FOR UPDATE SKIP LOCKED) p "
            "ORDER BY p.priority DESC, p.run_at, p.id LIMIT %(limit)s"
        )
    return (
        f"WITH picked AS MATERIALIZED ({pick}) "
        "UPDATE jobq_jobs j SET status='running', attempts=j.attempts+1, lease_until=%(lease)s, "
        "worker=%(worker)s, token=nextval('jobq_tokens'), started_at=%(now)s, "
        + ("max_attempts=LEAST(j.max_attempts, coalesce((SELECT l.n FROM unnest("
           "%(lkinds)s::text[], %(llimits)s::bigint[]) AS l(kind, n) WHERE l.kind = j.kind), "
           "j.max_attempts)), " if limited else "") +
        "heartbeat_at=%(now)s, progress=NULL, progress_message=NULL "
        # = ANY(ARRAY(...)): a primary-key lookup per picked id, whatever the estimates
        f"WHERE j.id = ANY(ARRAY(SELECT id FROM picked)) RETURNING {CLAIM_RETURNING}"
    )


REVIVE = shared.revive(D)


def list_conditions(where: ListFilter, now: float) -> tuple[list[str], list, str]:
    return shared.list_conditions(D, where, now)


PENDING_BY_QUEUE, RUNNING_BY_QUEUE, DEAD_BY_QUEUE, RECENT_FINISHED = shared.stats_reads(D)
