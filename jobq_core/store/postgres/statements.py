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
CLAIM_NAMES = ", ".join(CLAIM_FIELDS)
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


# How many more jobs of queue ``c`` (a jobq_queues row, NULL columns when the queue has
# none) a claim may start now: the claim's limit for a queue without controls, 0 while it
# is paused, else what its concurrency limit (minus its running jobs, counted in this
# statement) and its rate window leave. %(locked)s: the limited queues whose rows the
# claim's transaction locked first (LOCK_LIMITED).
ROOM = (
    "GREATEST(0, LEAST(%(limit)s, CASE WHEN c.name IS NULL THEN %(limit)s "
    "WHEN c.paused THEN 0 "
    # a limited queue whose row this claim did not lock (limited since the store last
    # looked, see ``controls``): none this time, rather than a count another claim may race
    "WHEN (c.concurrency IS NOT NULL OR c.rate_limit IS NOT NULL) "
    "AND NOT (c.name = ANY(%(locked)s::text[])) THEN 0 ELSE LEAST("
    "CASE WHEN c.concurrency IS NULL THEN %(limit)s ELSE c.concurrency - (SELECT count(*) "
    "FROM jobq_jobs r WHERE r.status='running' AND r.queue=c.name) END, "
    "CASE WHEN c.rate_limit IS NULL THEN %(limit)s "
    "WHEN c.window_start IS NULL OR c.window_start + c.rate_per <= %(now)s THEN c.rate_limit "
    "ELSE c.rate_limit - c.window_count END) END))"
)
_PENDING_IN = ("SELECT id, priority, run_at FROM jobq_jobs WHERE status='pending' "
               "AND queue={q} AND run_at<=%(now)s " + ORDER_PENDING)
# Before a claim that may start jobs of limited queues: lock their rows, in the claim's
# transaction, so that concurrent claims of those queues take turns. (The claim statement
# then starts after the other's commit, with a snapshot that sees the jobs it started; a
# lock taken inside the claim statement would leave its snapshot older than the lock.)
LOCK_LIMITED = (
    "SELECT name FROM jobq_queues WHERE name = ANY(%s) "
    "AND (concurrency IS NOT NULL OR rate_limit IS NOT NULL) ORDER BY name FOR UPDATE"
)
# What ``controls.ControlCache`` reads: (name, limited, has pending jobs) per controlled queue.
CONTROL_STATE = (
    "SELECT name, NOT paused AND (concurrency IS NOT NULL OR rate_limit IS NOT NULL), "
    "EXISTS (SELECT 1 FROM jobq_jobs j WHERE j.status='pending' AND j.queue=c.name) "
    "FROM jobq_queues c"
)
# The queues with pending jobs, one index seek each (a loose scan of the per-queue index).
_QUEUES_PENDING = (
    "qs(name) AS (SELECT (SELECT min(queue) FROM jobq_jobs WHERE status='pending') "
    "UNION ALL SELECT (SELECT min(queue) FROM jobq_jobs WHERE status='pending' "
    "AND queue > qs.name) FROM qs WHERE qs.name IS NOT NULL), "
)


@functools.lru_cache(maxsize=16)
def claim_sql(n_queues: int, per_queue: bool = False, clamped: bool = False) -> str:
    """The claim: one statement. ``FOR UPDATE SKIP LOCKED`` lets concurrent claims pass
    each other's rows instead of waiting; the MATERIALIZED CTE pins the picked ids (a
    planner may otherwise rerun a LIMIT subquery per row and update more than asked).
    Parameters: %(now)s %(limit)s %(lease)s %(worker)s %(locked)s, and %(queue)s or
    %(queues)s;
    ``clamped``: %(lkinds)s and %(llimits)s, kinds whose attempt limit clamps
    ``max_attempts``.

    Pause and limits are enforced here: each queue is scanned for at most its ROOM (one
    bounded scan per named queue, LATERAL, merged). A claim on every queue is either one
    ordered scan of the pending index leaving out the queues with controls, or
    (``per_queue``, while controlled queues have pending jobs: see ``controls``) one
    bounded scan per queue with pending jobs. The rate windows of the queues it started
    jobs of move in the same statement (``win``)."""
    recursive = ""
    if n_queues == 0 and not per_queue:
        pick = (f"SELECT id FROM jobq_jobs WHERE status='pending' AND run_at<=%(now)s "
                # queue || '': statistics cannot see through it. On the column itself,
                # when every job is in one queue (n_distinct 1), the planner takes any
                # "queue <> x" to match nothing and sorts the whole pending index for each
                # claim: 3,000 claims/s fell to 20 with 800,000 pending once analyzed.
                f"AND (queue || '') <> ALL(ARRAY(SELECT name FROM jobq_queues)) "
                f"{ORDER_PENDING} LIMIT %(limit)s FOR UPDATE SKIP LOCKED")
    else:
        if n_queues == 0:
            recursive, names = "RECURSIVE " + _QUEUES_PENDING, "qs q WHERE q.name IS NOT NULL"
        elif n_queues == 1:
            names = "(SELECT %(queue)s::text AS name) q"
        else:
            names = "unnest(%(queues)s::text[]) AS q(name)"
        pick = (
            "SELECT p.id FROM (SELECT q.name FROM " + names + ") q LEFT JOIN jobq_queues c "
            "ON c.name = q.name CROSS JOIN LATERAL (" + _PENDING_IN.format(q="q.name")
            + f" LIMIT {ROOM} FOR UPDATE SKIP LOCKED) p"
            + ("" if n_queues == 1 else
               " ORDER BY p.priority DESC, p.run_at, p.id LIMIT %(limit)s")
        )
    return (
        f"WITH {recursive}picked AS MATERIALIZED ({pick}), "
        "claimed AS (UPDATE jobq_jobs j SET status='running', attempts=j.attempts+1, "
        "lease_until=%(lease)s, worker=%(worker)s, token=nextval('jobq_tokens'), "
        + ("max_attempts=LEAST(j.max_attempts, coalesce((SELECT l.n FROM unnest("
           "%(lkinds)s::text[], %(llimits)s::bigint[]) AS l(kind, n) WHERE l.kind = j.kind), "
           "j.max_attempts)), " if clamped else "") +
        "started_at=%(now)s, heartbeat_at=%(now)s, progress=NULL, progress_message=NULL "
        # = ANY(ARRAY(...)): a primary-key lookup per picked id, whatever the estimates
        f"WHERE j.id = ANY(ARRAY(SELECT id FROM picked)) RETURNING {CLAIM_RETURNING}), "
        "win AS (UPDATE jobq_queues w SET "
        "window_count = CASE WHEN w.window_start IS NULL OR w.window_start + w.rate_per "
        "<= %(now)s THEN n.started ELSE w.window_count + n.started END, "
        "window_start = CASE WHEN w.window_start IS NULL OR w.window_start + w.rate_per "
        "<= %(now)s THEN %(now)s ELSE w.window_start END "
        "FROM (SELECT queue, count(*) AS started FROM claimed GROUP BY queue) n "
        "WHERE w.name = n.queue AND w.rate_limit IS NOT NULL) "
        f"SELECT {CLAIM_NAMES} FROM claimed"
    )


# -- queue controls and schedules ---------------------------------------------------------

QUEUE_CONTROLS = ("SELECT name, paused, concurrency, rate_limit, rate_per FROM jobq_queues "
                  "ORDER BY name")
PAUSE = (
    "INSERT INTO jobq_queues(name, paused, updated_at) VALUES (%s, %s, %s) "
    "ON CONFLICT (name) DO UPDATE SET paused=excluded.paused, updated_at=excluded.updated_at"
)
# A new limit keeps the current rate window when its length is the same: re-setting a
# limit never grants a fresh burst.
SET_LIMIT = (
    "INSERT INTO jobq_queues(name, concurrency, rate_limit, rate_per, updated_at) "
    "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (name) DO UPDATE SET "
    "concurrency=excluded.concurrency, rate_limit=excluded.rate_limit, "
    "window_start=CASE WHEN jobq_queues.rate_per IS NOT DISTINCT FROM excluded.rate_per "
    "THEN jobq_queues.window_start END, "
    "window_count=CASE WHEN jobq_queues.rate_per IS NOT DISTINCT FROM excluded.rate_per "
    "THEN jobq_queues.window_count ELSE 0 END, "
    "rate_per=excluded.rate_per, updated_at=excluded.updated_at"
)
DROP_UNCONTROLLED = ("DELETE FROM jobq_queues WHERE name=%s AND NOT paused "
                     "AND concurrency IS NULL AND rate_limit IS NULL")
SCHEDULES = ("SELECT key, kind, queue, every, cron, tz, last_tick, last_job, updated_at "
             "FROM jobq_schedules ORDER BY key")
SCHEDULE_REGISTER = (
    "INSERT INTO jobq_schedules(key, kind, queue, every, cron, tz, last_tick, updated_at) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO NOTHING"
)
# The tick is ours only if no worker recorded it (or a later one) first: a concurrent
# tick waits for the row lock, then finds the tick taken.
SCHEDULE_TICK = (
    "UPDATE jobq_schedules SET last_tick=%s, updated_at=%s "
    "WHERE key=%s AND (last_tick IS NULL OR last_tick<%s)"
)
SCHEDULE_FORGET = "DELETE FROM jobq_schedules WHERE key=%s"
SCHEDULE_JOB = "UPDATE jobq_schedules SET last_job=%s WHERE key=%s"


REVIVE = shared.revive(D)


def list_conditions(where: ListFilter, now: float) -> tuple[list[str], list, str]:
    return shared.list_conditions(D, where, now)


PENDING_BY_QUEUE, RUNNING_BY_QUEUE, DEAD_BY_QUEUE, RECENT_FINISHED = shared.stats_reads(D)
