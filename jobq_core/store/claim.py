"""The claim's rules, written once: the fragments both claim statements are built from.

A claim is ONE statement (``sqlite/dialect.py``, ``postgres/dialect.py``): each dialect
writes only how its statement locks (SQLite: the file's write lock; PostgreSQL: ``FOR
UPDATE SKIP LOCKED``, limited queues' rows locked first), how parameters are spelt, and
what its SQL cannot say the other's way (SQLite has no LATERAL and no LIMIT per row, so it
cuts with row numbers). What a claim may start is decided here:

* ``room``: how many jobs of a queue (its ``jobq_queues`` row ``c``) may start now: none
  while it is paused, else what its concurrency limit (minus its running jobs, counted in
  the claim's own statement) and its rate window leave, never more than the claim's limit;
* ``window_over`` and ``window_move``: the rate window, opened again once ``rate_per``
  has passed. It moves in the claim's own statement on both stores: on PostgreSQL in a
  step of the statement (``win``); SQLite cannot write a second table from a statement
  (no INSERT, UPDATE or DELETE inside WITH), so there a trigger on the claim's update
  runs the same ``window_move`` (``sqlite/schema.py``'s ``RATE_TRIGGER``), and exists
  only while some queue has a rate limit (with it there always, every claim and every
  completion paid about 1 % of a job's instructions, tests/perf);
* ``keyed_scan``: the key filter (``sql.key_ok``) and the per-key cut (``sql.key_room``)
  of a queue with key limits;
* ``QUEUES_PENDING``: the queues with pending jobs, one index seek each (a loose scan of
  the per-queue index), which a claim on every queue starts from while controlled queues
  have pending jobs (``controls``);
* ``claimed``: what a claim writes: a fresh token, a lease, one more attempt, and the
  ``clamp`` of ``max_attempts`` to the worker's limit for the kind (the row then holds the
  one allowance every later decision reads: ``store/attempts.py``).

Each fragment takes the dialect's ``Spelling``: its parameters' names and the functions
that have no common name.
"""
from __future__ import annotations

from typing import NamedTuple

from .sql import ORDER_PENDING, key_ok, key_room


class Spelling(NamedTuple):
    now: str  # the claim's parameters, as the dialect names them
    limit: str
    lease: str
    worker: str
    token: str  # a fresh fencing token
    least: str  # the smallest / largest of several values
    greatest: str


UNKEYED = " OR c.key_concurrency IS NOT NULL OR c.ordered"
"""Added to ``c.paused`` by a claim without the key filter: a queue with key limits gets no
room from it (the control cache may lag: see ``controls``)."""
LIMITED = ("(c.concurrency IS NOT NULL OR c.rate_limit IS NOT NULL OR c.key_concurrency IS "
           "NOT NULL OR c.ordered)")
"""A queue row whose claims must take turns (PostgreSQL locks these rows first)."""
QUEUES_PENDING = (
    "qs(name) AS (SELECT (SELECT min(queue) FROM jobq_jobs WHERE status='pending') "
    "UNION ALL SELECT (SELECT min(queue) FROM jobq_jobs WHERE status='pending' "
    "AND queue>qs.name) FROM qs WHERE qs.name IS NOT NULL)"
)


def window_over(t: str, now: str) -> str:
    """The rate window of queue row ``t`` (``""``: unqualified) is over at ``now``: none
    opened yet, or ``rate_per`` passed since it opened."""
    p = f"{t}." if t else ""
    return f"{p}window_start IS NULL OR {p}window_start + {p}rate_per <= {now}"


def window_move(t: str, now: str, started: str) -> str:
    """The SET of a queue row ``t`` whose claim started ``started`` jobs at ``now``: a
    window that is over opens again at ``now`` with them; else they are added to it."""
    p = f"{t}." if t else ""
    over = window_over(t, now)
    return (f"window_count = CASE WHEN {over} THEN {started} ELSE {p}window_count + {started} "
            f"END, window_start = CASE WHEN {over} THEN {now} ELSE {p}window_start END")


def room(s: Spelling, keyed: bool, first: str = "", last: str = "") -> str:
    """How many more jobs of queue row ``c`` a claim may start now (never negative:
    SQLite reads a negative LIMIT as none). ``keyed``: the claim carries the key filter
    (else a queue with key limits gets none). ``first`` / ``last``: a dialect's own
    ``WHEN ... THEN`` cases, before and after the paused one."""
    return (
        f"CASE {first}WHEN c.paused{'' if keyed else UNKEYED} THEN 0 {last}ELSE "
        f"{s.greatest}(0, {s.least}({s.limit}, "
        f"CASE WHEN c.concurrency IS NULL THEN {s.limit} ELSE c.concurrency - (SELECT count(*) "
        "FROM jobq_jobs r WHERE r.status='running' AND r.queue=c.name) END, "
        f"CASE WHEN c.rate_limit IS NULL THEN {s.limit} WHEN {window_over('c', s.now)} "
        "THEN c.rate_limit ELSE c.rate_limit - c.window_count END)) END"
    )


def pending(s: Spelling, where: str, columns: str = "id, priority, run_at") -> str:
    """The ready jobs of the queue(s) ``where`` names, in claim order (no LIMIT yet)."""
    return (f"SELECT {columns} FROM jobq_jobs WHERE status='pending' AND run_at<={s.now} "
            f"AND {where} {ORDER_PENDING}")


def keyed_scan(s: Spelling, where: str, lock: str = "") -> str:
    """A keyed claim's candidates of the queue(s) ``where`` names (on ``j``): up to the
    claim's limit of ready jobs that pass the key filter, in claim order (``lock``: the
    row lock taken as they are passed; it cannot sit beside a window function), then per
    key only as many as its room (row numbers per key: no LIMIT per group). Columns: id,
    priority, run_at (no order: the caller cuts to the queue's room)."""
    return (
        "SELECT s.id, s.priority, s.run_at FROM (SELECT w.*, row_number() OVER (PARTITION BY "
        "w.key ORDER BY w.priority DESC, w.run_at, w.id) AS krn FROM (SELECT j.id, "
        "j.priority, j.run_at, j.queue, j.key FROM jobq_jobs j WHERE j.status='pending' AND "
        f"{where} AND j.run_at<={s.now} AND {key_ok('j')} ORDER BY j.priority DESC, "
        f"j.run_at, j.id LIMIT {s.limit}{lock}) w) s WHERE s.key IS NULL OR s.krn <= "
        f"{key_room('s', s.limit)}"
    )


def clamp(s: Spelling, kind_limit: str) -> str:
    """The SET that lowers a claimed job's ``max_attempts`` to ``kind_limit`` (the
    worker's limit for its kind, or ``max_attempts`` for a kind without one); never
    raises it."""
    return f"max_attempts={s.least}(max_attempts, {kind_limit}), "


def claimed(s: Spelling, clamped: str = "") -> str:
    """The SET of a claimed job: running under a fresh token and a lease, one more
    attempt, its progress cleared (``clamped``: a ``clamp``)."""
    return (f"status='running', attempts=attempts+1, lease_until={s.lease}, worker={s.worker}, "
            f"{clamped}token={s.token}, started_at={s.now}, heartbeat_at={s.now}, "
            "progress=NULL, progress_message=NULL")
