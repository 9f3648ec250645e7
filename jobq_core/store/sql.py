"""The SQL every store runs: each statement written once, here.

Both stores keep the same tables and the same partial indexes, so a statement differs
between them only in its placeholder (``?`` here; a dialect rewrites it to its own) and in
a few named fragments in braces, which each dialect supplies (``Dialect.FRAGMENTS``):

* ``{job_cols}`` / ``{job_cols_lean}``: a ``Job``'s columns, with or without payload and
  result (SQLite reads a big payload from its side table);
* ``{lock}``: the row lock a read-then-write takes (``FOR UPDATE``; SQLite's write lock
  covers the whole file, so nothing);
* ``{skip_locked}``: the same, passing rows another transaction holds;
* ``{names}`` / ``{ids}``: a list of names or ids bound as ONE parameter (the dialect's
  ``list_param`` makes it);
* the string and arithmetic functions that have no common spelling: ``{bucket_finished}``,
  ``{bucket_ended}``, ``{first_line}``, ``{tail}``, ``{queue_list}``.

Statements that truly differ (the claim, a bulk insert, batched completions and
heartbeats) are each dialect's own, in ``sqlite/dialect.py`` and ``postgres/dialect.py``.
Every value is a bound parameter; a statement's shape never depends on data.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence


# -- the fence: every write for a running job carries it ------------------------------------


def fence(table: str = "", job_id: str = "?", token: str = "?") -> str:
    """The fence every write for a running job carries: it changes the job only while it is
    still running under the claim's token. Parameters (job id, token), unless given as
    column names (``fence("j", "v.id", "v.token")`` for a join)."""
    t = f"{table}." if table else ""
    return f"{t}id={job_id} AND {t}status='running' AND {t}token={token}"


FENCE = fence()

# -- producing --------------------------------------------------------------------------------

INSERT_COLUMNS = ("kind, payload, queue, priority, run_at, max_attempts, unique_key, key, "
                  "trace_context, created_at")
INSERT = f"INSERT INTO jobq_jobs({INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
"""One job; parameters: ``NewJob``'s fields, then ``created_at`` (a None for each of
unique key, key and trace context the job has not)."""
INSERT_BARE = ("INSERT INTO jobq_jobs(kind, payload, queue, priority, run_at, max_attempts, "
               "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
"""One job with no unique key, key or trace context (the usual one): parameters
``NewJob``'s first six fields, then ``created_at``. It binds no None: CPython's sqlite3
passes a None parameter through its adapter lookup, about 3,700 instructions each, 3.4 %
of an enqueue (callgrind, ``tests/perf/instr_child.py enqueue``: 112,232 a job with one
None bound, 108,491 with NULL written in the statement instead)."""
INSERT_RETURNING = INSERT + " RETURNING id"
INSERT_UNIQUE = (INSERT + " ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL "
                 "AND status IN ('pending','running') DO NOTHING RETURNING id")
"""One job with a unique key: its id, or no row when a live job holds the key."""
LIVE_WITH_KEY = "SELECT id FROM jobq_jobs WHERE unique_key=? AND status IN ('pending','running')"

# -- copying from another store (``ops/copying.py``) ---------------------------------------

COPY_OUT = (
    "SELECT {job_cols}, has_dependents FROM jobq_jobs WHERE id>? AND (status IN {names} OR "
    "(has_dependents AND status IN ('succeeded','dead','cancelled') AND EXISTS (SELECT 1 "
    "FROM jobq_deps d JOIN jobq_jobs w ON w.id=d.job_id WHERE d.depends_on=jobq_jobs.id "
    "AND w.status IN {names}))) ORDER BY id LIMIT ?")
"""A page of a copy's source, in id order: the jobs of the statuses copied, and the ended
jobs such a job waits (or waited) on. Parameters: after id, statuses, statuses, limit."""
COPY_OUT_DEPS = ("SELECT d.job_id, d.depends_on, d.allow_failed FROM jobq_deps d JOIN jobq_jobs j "
                 "ON j.id=d.depends_on WHERE d.job_id IN {ids} ORDER BY d.job_id, d.depends_on")
"""What the jobs of a page wait on (a pruned dependency counts as met: left out)."""
COPY_STATE = ("UPDATE jobq_jobs SET status=?, attempts=?, error=?, finished_at=?, result=?, "
              "unique_key=? WHERE id=?")
"""A copied job's state, set on the row just inserted (``job_copy_in``)."""
COPY_MARK_NEW = "INSERT INTO jobq_meta(key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING"
COPY_MARK = "SELECT value FROM jobq_meta WHERE key=?"
COPY_MARK_MOVE = "UPDATE jobq_meta SET value=? WHERE key=? AND value=?"
"""A copy's record moves only from the text its copier last wrote: two copies from one
source into one store cannot both write a page."""
COPY_QUEUE = ("INSERT INTO jobq_queues(name, paused, concurrency, rate_limit, rate_per, "
              "key_concurrency, ordered, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
              "ON CONFLICT (name) DO NOTHING")
"""A queue's controls from another store (a fresh rate window), unless it has some here."""

# -- a running job -----------------------------------------------------------------------------

_SUCCEEDED = ("UPDATE jobq_jobs SET status='succeeded', result=?, finished_at=?, "
              f"lease_until=NULL, cancel_requested=false WHERE {FENCE}")
COMPLETE = _SUCCEEDED + " AND NOT has_dependents"
"""The fenced completion of a job no other job waits on: the hot path, as cheap as a
completion can be. Parameters: result, now, job id, token. Nothing changed: fenced out,
or jobs wait on it (then ``COMPLETE_SETTLING``, in a transaction with the settling)."""
COMPLETE_SETTLING = _SUCCEEDED + " RETURNING has_dependents"
"""The fenced completion of any job; a row when it was accepted, saying whether jobs wait
on it."""
SUCCEEDED_UNDER = "SELECT has_dependents FROM jobq_jobs WHERE id=? AND token=? AND status='succeeded'"
"""After a break mid-commit: did this completion commit? (A succeeded job keeps the token
of the claim that completed it.)"""
EXTEND = f"UPDATE jobq_jobs SET lease_until=?, heartbeat_at=? WHERE {FENCE} RETURNING id, cancel_requested"
"""Parameters: lease_until, now, job id, token."""
LEASES_HELD = "SELECT id, token, cancel_requested FROM jobq_jobs WHERE status='running' AND id IN {ids}"
"""The running jobs among a list of ids, with their tokens (``job_check_many``). Parameter:
the ids as the dialect passes a list."""
PROGRESS = f"UPDATE jobq_jobs SET progress=?, progress_message=? WHERE {FENCE}"
"""Parameters: fraction, message, job id, token."""
RUNNING_ROW = ("SELECT attempts, max_attempts, worker, started_at, cancel_requested, queue, "
               "has_dependents "
               f"FROM jobq_jobs WHERE {FENCE}{{lock}}")
LEAVE_RUNNING = ("UPDATE jobq_jobs SET status=?, run_at=?, attempts=?, error=coalesce(?, error), "
                 "finished_at=?, lease_until=NULL, token=NULL, heartbeat_at=NULL, "
                 f"cancel_requested=false WHERE {FENCE}")
"""A job leaves "running" for another status, with the columns every such move resets.
Parameters: status, run_at, attempts, error or None, finished_at, job id, token."""
LEAVE_RUNNING_RETURNING = LEAVE_RUNNING + " RETURNING {job_cols}"
RECORD_ATTEMPT = ("INSERT INTO jobq_attempts(job_id, attempt, worker, token, started_at, "
                  "ended_at, outcome, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
"""An attempt that ended without success."""
LAST_OUTCOMES = "SELECT outcome FROM jobq_attempts WHERE job_id=? ORDER BY seq DESC LIMIT ?"
"""How a job's latest recorded attempts ended, newest first (the poison check of a reap).
Parameters: job id, how many."""
ATTEMPT_RECORDED = "SELECT outcome FROM jobq_attempts WHERE job_id=? AND token=?"
"""After a break mid-commit: did the attempt's end commit?"""
QUARANTINE = ("UPDATE jobq_jobs SET status='dead', error=?, finished_at=?, lease_until=NULL, "
              f"token=NULL, heartbeat_at=NULL, cancel_requested=false WHERE {FENCE}")
"""A job moved to dead because jobq cannot read one of its columns; the row keeps the value."""
EXPIRED_LEASES = (
    "SELECT id, token, attempts, max_attempts, worker, started_at, lease_until, "
    "cancel_requested, queue, has_dependents FROM jobq_jobs WHERE status='running' "
    "AND (lease_until<? OR lease_until IS NULL OR lease_until>?) LIMIT ?{skip_locked}")
"""Leases that ran out, and leases jobq never grants (none, or longer than the longest it
grants: another program wrote them). Parameters: now, now + the longest lease, limit."""

# -- administering -----------------------------------------------------------------------------

JOB = "SELECT {job_cols} FROM jobq_jobs WHERE id=?"
STATUSES = "SELECT id, status FROM jobq_jobs WHERE id IN {ids}"
"""Parameter: the ids as the dialect passes a list (``job_statuses``)."""
JOB_STATE = "SELECT status, queue, attempts, worker, token, started_at FROM jobq_jobs WHERE id=?{lock}"
CANCEL_PENDING = "UPDATE jobq_jobs SET status='cancelled', finished_at=? WHERE id=?"
REQUEST_CANCEL = "UPDATE jobq_jobs SET cancel_requested=true WHERE id=?"
REVIVE = ("UPDATE jobq_jobs SET status='pending', run_at=?, attempts=0, finished_at=NULL, "
          "lease_until=NULL, token=NULL, cancel_requested=false, progress=NULL, "
          "progress_message=NULL")
"""A finished (or taken back) job pending again with a fresh allowance; a WHERE follows.
Parameter: run_at."""
REVIVE_ONE = REVIVE + " WHERE id=? RETURNING queue"
_PRUNABLE = ("status IN {names} AND finished_at<? "
             # the newest job stays: a store may number new jobs max(id)+1 (store.base's Ids rule)
             "AND id<(SELECT max(id) FROM jobq_jobs) "
             # a job that jobs still wait on stays: they read its result and status
             "AND (NOT has_dependents OR NOT EXISTS (SELECT 1 FROM jobq_deps d JOIN jobq_jobs w "
             "ON w.id=d.job_id WHERE d.depends_on=jobq_jobs.id AND w.status='waiting'))")
PRUNE_COUNT = f"SELECT status, count(*) FROM jobq_jobs WHERE {_PRUNABLE} GROUP BY status"
PRUNE_PICK = f"SELECT id, status FROM jobq_jobs WHERE {_PRUNABLE} LIMIT ?"
"""Parameters: statuses (one list parameter), finished before, limit."""
DELETE_ATTEMPTS = "DELETE FROM jobq_attempts WHERE job_id IN {ids}"
DELETE_JOBS = "DELETE FROM jobq_jobs WHERE id IN {ids}"
DELETE_DEPS = "DELETE FROM jobq_deps WHERE job_id IN {ids}"

# -- dependencies --------------------------------------------------------------------------

DEP_TARGETS = "SELECT id, status FROM jobq_jobs WHERE id IN {ids} ORDER BY id{lock}"
"""The jobs a new job would wait on (one list parameter), with their statuses, locked: a
completion racing the enqueue either commits first (and is seen here) or waits for it
(and then sees the new dependent)."""
DEP_INSERT = "INSERT INTO jobq_deps(job_id, depends_on, allow_failed) VALUES (?, ?, ?)"
MARK_DEPENDED_ON = "UPDATE jobq_jobs SET has_dependents=true WHERE id IN {ids} AND NOT has_dependents"
WAITING_DEPENDENTS = (
    "SELECT d.job_id, d.allow_failed, j.queue FROM jobq_deps d JOIN jobq_jobs j ON j.id=d.job_id "
    "WHERE d.depends_on=? AND j.status='waiting' ORDER BY d.job_id{lock}")
"""Locked, so that two dependencies ending at once settle their common dependent one after
the other: the second decrements the count the first one left."""
_UNMET_EDGE = ("x.status<>'succeeded' AND (NOT d.allow_failed OR "
               "(x.status<>'dead' AND x.status<>'cancelled'))")
"""An edge ``d`` to dependency ``x`` not met yet: ``x`` has not succeeded (for an
``allow_failed`` job: has not ended)."""


def _unmet_of(job: str) -> str:
    return ("SELECT count(*) FROM jobq_deps d JOIN jobq_jobs x ON x.id=d.depends_on "
            f"WHERE d.job_id={job} AND {_UNMET_EDGE}")


UNMET = _unmet_of("?")
"""How many of a job's dependencies are not met (a pruned one counts as met): counted over
its edges, what the ``unmet`` column keeps without counting."""
TO_WAITING = (f"UPDATE jobq_jobs SET status='waiting', unmet=({_unmet_of('jobq_jobs.id')}) "
              "WHERE id=? AND status='pending'")
"""A job made to wait (its edges written first), its ``unmet`` counted once, here: the
settling of each dependency's end then decrements it (``UNMET_DOWN``) instead of counting."""
UNMET_DOWN = "UPDATE jobq_jobs SET unmet=unmet-1 WHERE id=? AND status='waiting' RETURNING unmet"
"""One dependency of a waiting job met: what is left (no row: it is not waiting)."""
RECOUNT = (f"UPDATE jobq_jobs SET unmet=({_unmet_of('jobq_jobs.id')}) "
           "WHERE id=? AND status='waiting' RETURNING unmet")
"""A waiting job whose ``unmet`` reached 0, counted over its edges before it is released:
a count written by a jobq from before it (an older worker during an upgrade writes none),
or a dependency retried since, is corrected here instead of releasing the job early."""
RELEASE_WAITING = "UPDATE jobq_jobs SET status='pending' WHERE id=? AND status='waiting'"
CANCEL_DEPENDENT = ("UPDATE jobq_jobs SET status='cancelled', finished_at=?, error=? "
                    "WHERE id=? AND status IN ('waiting','pending')")
STRANDED_WAITING = (
    "SELECT w.id FROM jobq_jobs w WHERE w.status='waiting' AND NOT EXISTS (SELECT 1 "
    f"FROM jobq_deps d JOIN jobq_jobs x ON x.id=d.depends_on WHERE d.job_id=w.id "
    f"AND {_UNMET_EDGE}) ORDER BY w.id LIMIT ?")
"""Waiting jobs whose dependencies are all met, counted over the edges (the reaper's sweep):
what a crash between a completion and its settling leaves, or an older worker's settling
that left ``unmet`` as it was. A job waiting on a dead or cancelled dependency (retried
while it was dead) is not stranded: it waits for that dependency's retry."""
WAITS_ON = ("SELECT j.id, j.kind, j.status, d.allow_failed FROM jobq_deps d JOIN jobq_jobs j "
            "ON j.id=d.depends_on WHERE d.job_id=? ORDER BY j.id")
WAITED_BY = ("SELECT j.id, j.kind, j.status, d.allow_failed FROM jobq_deps d JOIN jobq_jobs j "
             "ON j.id=d.job_id WHERE d.depends_on=? ORDER BY j.id")
DEPENDENCY_RESULTS = ("SELECT j.id, j.status, j.result FROM jobq_deps d JOIN jobq_jobs j "
                      "ON j.id=d.depends_on WHERE d.job_id=? ORDER BY j.id")

# -- reading -----------------------------------------------------------------------------------

ATTEMPTS_ENDED = ("SELECT job_id, attempt, worker, token, started_at, ended_at, outcome, error "
                  "FROM jobq_attempts WHERE job_id=? ORDER BY seq")
ATTEMPT_CURRENT = ("SELECT attempts, worker, token, started_at, finished_at, status FROM jobq_jobs "
                   "WHERE id=? AND status IN ('running','succeeded')")
"""``job_attempts``' two reads; ``rows.attempts_from_rows`` joins them."""

# stats: four reads of one snapshot, each on a partial index; ``rows.stats_from_rows``
# (PENDING_BY_QUEUE, the first, is below ``key_ok``, which it uses)
RUNNING_BY_QUEUE = ("SELECT queue, count(*), count(*) FILTER (WHERE lease_until<?), "
                    "count(DISTINCT key) FROM jobq_jobs WHERE status='running' GROUP BY queue")
"""Per queue: running jobs, those whose lease ran out, and the keys they hold (busy keys)."""
DEAD_BY_QUEUE = "SELECT queue, count(*) FROM jobq_jobs WHERE status='dead' GROUP BY queue"
WAITING_BY_QUEUE = "SELECT queue, count(*) FROM jobq_jobs WHERE status='waiting' GROUP BY queue"
RECENT_FINISHED = ("SELECT status, count(*) FROM jobq_jobs WHERE status IN "
                   "('succeeded','dead','cancelled') AND finished_at>=? GROUP BY status")

THROUGHPUT_FINISHED = (
    "SELECT status, {bucket_finished}, count(*) FROM jobq_jobs WHERE status IN "
    "('succeeded','dead') AND finished_at>=? AND finished_at<? GROUP BY 1, 2")
THROUGHPUT_FAILED = (
    "SELECT 'failed', {bucket_ended}, count(*) FROM jobq_attempts WHERE ended_at>=? "
    "AND ended_at<? AND outcome IN (?, ?, ?) GROUP BY 2")
"""Parameters: start, bucket length, start, end (and the three failed outcomes)."""

# SQL groups dead jobs by first line and the error's tail (where a traceback's exception
# line is); ``error_groups.group_dead`` then merges groups whose error lines fold alike.
DEAD_GROUPS = ("SELECT kind, {first_line}, {tail}, count(*), max(finished_at), max(id), "
               "{queue_list} FROM jobq_jobs WHERE {{where}} AND finished_at IS NOT NULL "
               "GROUP BY 1, 2, 3")

# -- why a job is not running ----------------------------------------------------------------

_QUEUE_COLUMNS = ("paused, concurrency, rate_limit, rate_per, window_start, window_count, "
                  "key_concurrency, ordered")
"""A queue's controls, as ``rows.controls_from_row`` reads them."""
QUEUE_STATE = f"SELECT {_QUEUE_COLUMNS} FROM jobq_queues WHERE name=?"
RUNNING_IN_QUEUE = "SELECT count(*) FROM jobq_jobs WHERE status='running' AND queue=?"
AHEAD = (
    "SELECT count(*) FROM (SELECT 1 FROM jobq_jobs WHERE status='pending' AND queue=? "
    "AND run_at<=? AND (priority>? OR (priority=? AND (run_at<? OR (run_at=? AND id<?)))) "
    "LIMIT ?) AS ahead")
"""Ready jobs of the queue ahead of a job in claim order, counted up to a cap (an index
range of the per-queue pending index, never the whole backlog)."""
def key_open(t: str = "") -> str:
    """A job (of table ``t``) that holds its key's place: the WHERE of the partial index
    ``jobq_jobs_key`` (queue, key, status, id), written out in full by every read meant to
    use it (SQLite uses a partial index only for a query whose WHERE repeats the index's
    terms; PostgreSQL proves it from this). Equalities, not ``IN``: SQLite builds a
    temporary table for an ``IN`` list of three or more constants each time it evaluates
    one, and a partial index's WHERE is evaluated on every write of a job's status."""
    col = f"{t}.status" if t else "status"
    return f"({col}='pending' OR {col}='running' OR {col}='waiting')"


KEY_OPEN = key_open()
KEY_RUNNING = (f"SELECT id FROM jobq_jobs WHERE {KEY_OPEN} AND status='running' AND queue=? "
               "AND key=? ORDER BY id LIMIT ?")
"""The running jobs holding a key in a queue (the first few)."""
KEY_EARLIER = (f"SELECT id FROM jobq_jobs WHERE queue=? AND key=? AND {KEY_OPEN} AND id<? "
               "ORDER BY id LIMIT 1")
"""The first open job of a key before a given one (what holds an ordered key)."""
HOLDS = (
    "SELECT j.id, CASE WHEN j.key IS NULL THEN 0 ELSE (SELECT count(*) FROM jobq_jobs WHERE "
    f"{KEY_OPEN} AND status='running' AND queue=j.queue AND key=j.key) END, "
    "CASE WHEN j.key IS NULL THEN NULL ELSE (SELECT min(id) FROM jobq_jobs WHERE "
    f"queue=j.queue AND key=j.key AND {KEY_OPEN} AND id<j.id) END, "
    "(SELECT count(*) FROM jobq_deps d JOIN jobq_jobs x ON x.id=d.depends_on "
    "WHERE d.job_id=j.id AND x.status<>'succeeded') FROM jobq_jobs j WHERE j.id IN {ids}")
"""Per job: the running jobs of its key, the first open job of its key before it (the
reads of KEY_RUNNING and KEY_EARLIER, counted), and the jobs it waits on that have not
succeeded: each a probe of an index, for a page of jobs in one statement."""

# -- queue controls ----------------------------------------------------------------------------

QUEUE_CONTROLS = f"SELECT name, {_QUEUE_COLUMNS} FROM jobq_queues ORDER BY name"
KEYED = "(key_concurrency IS NOT NULL OR ordered)"
"""A queue row with a key limit (its claims carry the key filter)."""
CONTROL_STATE = (
    "SELECT name, NOT paused AND (concurrency IS NOT NULL OR rate_limit IS NOT NULL OR "
    f"{KEYED}), EXISTS (SELECT 1 FROM jobq_jobs j WHERE j.status='pending' AND "
    f"j.queue=c.name), NOT paused AND {KEYED} FROM jobq_queues c")
"""What ``controls.ControlCache`` reads: (name, limited, has pending jobs, keyed) per
controlled queue."""
PAUSE = ("INSERT INTO jobq_queues(name, paused, updated_at) VALUES (?, ?, ?) "
         "ON CONFLICT (name) DO UPDATE SET paused=excluded.paused, updated_at=excluded.updated_at")
SET_LIMIT = (
    "INSERT INTO jobq_queues(name, concurrency, rate_limit, rate_per, key_concurrency, "
    "ordered, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
    "concurrency=excluded.concurrency, rate_limit=excluded.rate_limit, "
    "key_concurrency=excluded.key_concurrency, ordered=excluded.ordered, "
    # a new limit keeps the current window (and its count) when the window length is the
    # same: setting a limit again never grants a fresh burst
    "window_start=CASE WHEN jobq_queues.rate_per IS NOT DISTINCT FROM excluded.rate_per "
    "THEN jobq_queues.window_start END, "
    "window_count=CASE WHEN jobq_queues.rate_per IS NOT DISTINCT FROM excluded.rate_per "
    "THEN jobq_queues.window_count ELSE 0 END, "
    "rate_per=excluded.rate_per, updated_at=excluded.updated_at")
DROP_UNCONTROLLED = ("DELETE FROM jobq_queues WHERE name=? AND NOT paused "
                     f"AND concurrency IS NULL AND rate_limit IS NULL AND NOT {KEYED}")
"""A queue with no control left has no row (its claims skip nothing)."""

# -- schedules ---------------------------------------------------------------------------------

SCHEDULES = ("SELECT key, kind, queue, every, cron, tz, last_tick, last_job, updated_at "
             "FROM jobq_schedules ORDER BY key")
SCHEDULE_REGISTER = (
    "INSERT INTO jobq_schedules(key, kind, queue, every, cron, tz, last_tick, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING")
SCHEDULE_TICK = ("UPDATE jobq_schedules SET last_tick=?, updated_at=? "
                 "WHERE key=? AND (last_tick IS NULL OR last_tick<?)")
"""The tick is ours only if no worker recorded it (or a later one) first: a concurrent tick
waits for the row (or the file's write lock), then finds the tick taken."""
SCHEDULE_REWIND = ("UPDATE jobq_schedules SET last_tick=?, updated_at=? "
                   "WHERE key=? AND last_tick=?")
"""A recorded tick written by a clock that was ahead, set back (only if it is still the one
read: another worker may have rewound it first)."""
SCHEDULE_FORGET = "DELETE FROM jobq_schedules WHERE key=?"
SCHEDULE_JOB = "UPDATE jobq_schedules SET last_job=? WHERE key=?"

# -- the worker registry -----------------------------------------------------------------------

_WORKER_COLUMNS = ("id, host, pid, queues, concurrency, started_at, last_seen, busy, "
                   "beat_interval, lease, pool, children")
WORKER_REGISTER = (
    f"INSERT INTO jobq_workers({_WORKER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET " + ", ".join(
        f"{name}=excluded.{name}" for name in _WORKER_COLUMNS.split(", ")[1:]))
WORKER_BEAT = "UPDATE jobq_workers SET last_seen=?, busy=? WHERE id=?"
WORKER_BEAT_CHILDREN = "UPDATE jobq_workers SET last_seen=?, busy=?, children=? WHERE id=?"
WORKER_DEREGISTER = "DELETE FROM jobq_workers WHERE id=?"
WORKER_FORGET = "DELETE FROM jobq_workers WHERE id=? AND last_seen=?"
WORKERS = f"SELECT {_WORKER_COLUMNS} FROM jobq_workers ORDER BY id"


# -- statements whose shape follows their arguments --------------------------------------------

ORDER_PENDING = "ORDER BY priority DESC, run_at, id"
"""The claim order, which both pending indexes follow."""

def key_ok(t: str) -> str:
    """The key filter of a keyed claim, on candidate ``t`` (an alias: a pending job of a
    queue that may have key limits): it has no key; or its queue is ``ordered`` and no
    open (pending, running, waiting) job of its key comes before it, and none is running;
    or fewer of its key's jobs run than the queue's ``key_concurrency``; or the queue has
    no key limit. Each check an index probe (``jobq_jobs_key``)."""
    return (
        f"({t}.key IS NULL OR coalesce((SELECT CASE WHEN k.ordered THEN NOT EXISTS ("
        f"SELECT 1 FROM jobq_jobs e WHERE e.queue={t}.queue AND e.key={t}.key AND "
        f"{key_open('e')} AND e.id<{t}.id) AND NOT EXISTS (SELECT 1 FROM jobq_jobs r WHERE "
        f"{_running_of_key(t)}) WHEN k.key_concurrency IS NULL THEN true ELSE (SELECT "
        f"count(*) FROM jobq_jobs r WHERE {_running_of_key(t)}) < k.key_concurrency END "
        f"FROM jobq_queues k WHERE k.name={t}.queue), true))"
    )


def _running_of_key(t: str) -> str:
    """The running jobs (``r``) of the key of ``t`` in its queue: a seek on jobq_jobs_key."""
    return f"{key_open('r')} AND r.status='running' AND r.queue={t}.queue AND r.key={t}.key"


def _held(t: str) -> str:
    """Whether pending job ``t``, ready, is held on purpose: its queue (the row ``c``) is
    paused, or its key is held (``key_ok`` fails: an earlier job of an ordered key is open,
    or the key's running jobs fill ``key_concurrency``). The key's probes run only for a
    keyed job of a keyed queue."""
    return (f"(coalesce(c.paused, false) OR ({t}.key IS NOT NULL AND "
            f"coalesce(c.ordered OR c.key_concurrency IS NOT NULL, false) AND NOT {key_ok(t)}))")


PENDING_BY_QUEUE = (
    "SELECT j.queue, count(*), count(*) FILTER (WHERE j.run_at>?), "
    "count(*) FILTER (WHERE j.attempts>0), "
    f"min(j.run_at) FILTER (WHERE j.run_at<=? AND NOT {_held('j')}), "
    f"count(*) FILTER (WHERE j.run_at<=? AND {_held('j')}) "
    "FROM jobq_jobs j LEFT JOIN jobq_queues c ON c.name=j.queue WHERE j.status='pending' "
    "GROUP BY j.queue")
"""Per queue, of its pending jobs (parameters: now three times): all, those not due yet,
retries, the run_at of the longest-waiting ready job that could run (the lag), and the
ready jobs held on purpose (``_held``), which the lag leaves out: more workers would not
start them. Pending jobs only (the partial index): flat in finished jobs; a held key is
index probes per ready keyed job of a keyed queue."""


def key_room(t: str, limit: str) -> str:
    """How many more jobs of the key of ``t`` (a candidate that passed ``key_ok``) one
    claim may start: 1 for an ordered queue (the filter left one job per key), else what
    ``key_concurrency`` leaves; ``limit`` (the claim's limit parameter) without either."""
    return (
        f"coalesce((SELECT CASE WHEN k.ordered THEN 1 WHEN k.key_concurrency IS NULL THEN "
        f"{limit} ELSE k.key_concurrency - (SELECT count(*) FROM jobq_jobs r WHERE "
        f"{_running_of_key(t)}) END FROM jobq_queues k WHERE k.name={t}.queue), {limit})"
    )


@functools.lru_cache(maxsize=64)
def next_run_at(n_queues: int) -> str:
    """The earliest ``run_at`` after a given time among pending jobs (of the named queues,
    or of all): what an idle worker sets its timer by. Parameters: ``next_run_at_params``.

    Cheap with a million jobs scheduled: the pending indexes are ordered by priority
    first, so this is a loose index scan, two index seeks per distinct priority (the
    next priority below the last one, and the first ``run_at`` after the time within it),
    never a walk over the backlog. Several queues are one such scan each."""
    arms, picks = [], []
    q = "queue=? AND " if n_queues else ""
    first = "queue, " if n_queues else ""
    for i in range(max(1, n_queues)):
        arms.append(
            f"pr{i}(p) AS (SELECT (SELECT priority FROM jobq_jobs WHERE {q}status='pending' "
            f"ORDER BY {first}priority DESC LIMIT 1) UNION ALL "
            f"SELECT (SELECT priority FROM jobq_jobs WHERE {q}status='pending' "
            f"AND priority<pr{i}.p ORDER BY {first}priority DESC LIMIT 1) FROM pr{i} "
            f"WHERE pr{i}.p IS NOT NULL)")
        picks.append(
            f"SELECT (SELECT run_at FROM jobq_jobs WHERE {q}status='pending' AND "
            f"priority=pr{i}.p AND run_at>? ORDER BY {first}priority DESC, run_at LIMIT 1) "
            f"AS t FROM pr{i} WHERE pr{i}.p IS NOT NULL")
    return (f"WITH RECURSIVE {', '.join(arms)} SELECT min(t) FROM "
            f"({' UNION ALL '.join(picks)}) AS firsts")


def next_run_at_params(queues: Sequence[str], after: float) -> list[str | float]:
    if not queues:
        return [after]
    return [q for q in queues for _ in range(2)] + [x for q in queues for x in (q, after)]

# -- upkeep: settings, the maintenance leader, the schema's version ----------------------------

META = "SELECT key, value FROM jobq_meta"
META_PUT = ("INSERT INTO jobq_meta(key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value=excluded.value")
META_DROP = "DELETE FROM jobq_meta WHERE key=?"
DECLARED = "SELECT key, value FROM jobq_meta WHERE key >= 'declared.' AND key < 'declared/'"
"""The limits declared in code, as workers recorded them (``common/declared.py``)."""
LEADER_ELECT = (
    "INSERT INTO jobq_leader(name, worker, elected_at, expires_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (name) DO UPDATE SET worker=excluded.worker, expires_at=excluded.expires_at, "
    "elected_at=CASE WHEN jobq_leader.worker=excluded.worker THEN jobq_leader.elected_at "
    "ELSE excluded.elected_at END "
    "WHERE jobq_leader.worker=excluded.worker OR jobq_leader.expires_at<?")
"""Take or renew a role's lease: one row changed when this worker holds it now (renewed)
or when the holder's lease ran out (taken over). Parameters: name, worker, now, expires,
now."""
LEADER_RESIGN = "DELETE FROM jobq_leader WHERE name=? AND worker=?"
LEADER = "SELECT worker, elected_at, expires_at FROM jobq_leader WHERE name=?"

