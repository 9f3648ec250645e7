"""jobq's SQL for PostgreSQL: every statement the store runs that is worth a name.

Statements are fixed strings; every value is a bound parameter. Batches travel as arrays
(``unnest``), so a batch of any size is one statement and one round trip.
"""
from __future__ import annotations

import functools

from ...types import FINISHED, Job, JobStatus
from ..base import ListFilter
from ..rows import CLAIM_FIELDS

FENCE = "{t}id={id} AND {t}status='running' AND {t}token={token}"
"""The fence every write for a running job carries: it changes the job only while it is
still running under the claim's token. ``fence()`` fills it in."""


def fence(table: str = "", job_id: str = "%s", token: str = "%s") -> str:
    return FENCE.format(t=f"{table}." if table else "", id=job_id, token=token)


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
COMPLETE = (
    "UPDATE jobq_jobs SET status='succeeded', result=%s, finished_at=%s, lease_until=NULL, "
    "cancel_requested=false WHERE " + fence()
)
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
RECORD_ATTEMPT = (
    "INSERT INTO jobq_attempts(job_id, attempt, worker, token, started_at, ended_at, outcome, "
    "error) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
)
ATTEMPT_RECORDED = "SELECT outcome FROM jobq_attempts WHERE job_id=%s AND token=%s"
# Status a job leaves "running" for, with the columns every such move resets.
LEAVE_RUNNING = (
    "UPDATE jobq_jobs SET status=%s, run_at=%s, attempts=%s, error=coalesce(%s, error), "
    "finished_at=%s, lease_until=NULL, token=NULL, heartbeat_at=NULL, cancel_requested=false "
    "WHERE " + fence() + f" RETURNING {JOB_COLS}"
)
PROGRESS = "UPDATE jobq_jobs SET progress=%s, progress_message=%s WHERE " + fence()

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

ORDER_PENDING = "ORDER BY priority DESC, run_at, id"


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


REVIVE = (
    "UPDATE jobq_jobs SET status='pending', run_at=%s, attempts=0, finished_at=NULL, "
    "lease_until=NULL, token=NULL, cancel_requested=false, progress=NULL, progress_message=NULL"
)

LIST_ORDER = {
    JobStatus.PENDING: ORDER_PENDING[len("ORDER BY "):],
    "scheduled": "run_at, id",
    "retrying": "run_at, id",
    JobStatus.RUNNING: "lease_until, id",
}


SEARCH = (
    "(strpos(lower(kind), lower(%s)) > 0 OR strpos(lower(queue), lower(%s)) > 0 "
    "OR strpos(lower(coalesce(worker, '')), lower(%s)) > 0 "
    "OR strpos(lower(coalesce(error, '')), lower(%s)) > 0 OR id::text=%s)"
)
"""A free word of a search: in the kind, queue, worker or error (case folded), or the id.
Parameters: the word, five times."""


def list_conditions(where: ListFilter, now: float) -> tuple[list[str], list, str]:
    """WHERE fragments for a listing; each is a fixed string, every value a parameter."""
    conds: list[str] = []
    params: list = []
    status = where.status
    if status in ("scheduled", "retrying"):
        conds.append("status='pending'")
        conds.append("run_at>%s" if status == "scheduled" else "attempts>0")
        params += [now] if status == "scheduled" else []
    elif status is not None:
        conds.append("status=%s")
        params.append(str(status))
        if status in FINISHED:  # true for them anyway; matches the finished index
            conds.append("finished_at IS NOT NULL")
    for column, value in (("queue", where.queue), ("kind", where.kind), ("worker", where.worker)):
        if value is None:
            continue
        if where.prefix and column != "worker":
            conds.append(f"starts_with({column}, %s)")  # a prefix
            params += [value] * 1
        else:
            conds.append(f"{column}=%s")
            params.append(value)
    for word in where.search:
        conds.append(SEARCH)
        params += [word] * 5
    if where.error_contains:
        conds.append("strpos(error, %s) > 0")
        params.append(where.error_contains)
    if status is None:
        order = "id DESC"
    else:
        order = LIST_ORDER.get(status, "finished_at DESC, id DESC")
    return conds, params, order


PENDING_BY_QUEUE = (
    "SELECT queue, count(*), count(*) FILTER (WHERE run_at>%s), count(*) FILTER (WHERE attempts>0), "
    "min(run_at) FILTER (WHERE run_at<=%s) FROM jobq_jobs WHERE status='pending' GROUP BY queue"
)
RUNNING_BY_QUEUE = (
    "SELECT queue, count(*), count(*) FILTER (WHERE lease_until<%s) FROM jobq_jobs "
    "WHERE status='running' GROUP BY queue"
)
DEAD_BY_QUEUE = "SELECT queue, count(*) FROM jobq_jobs WHERE status='dead' GROUP BY queue"
RECENT_FINISHED = (
    "SELECT status, count(*) FROM jobq_jobs WHERE status IN "
    "('succeeded','dead','cancelled') AND finished_at>=%s GROUP BY status"
)
