"""The SQL both stores share: the same logic on the same schema, written once.

Both stores keep the same tables and the same partial indexes, so most statements are the
same text but for the dialect: the placeholder (``?`` on SQLite, ``%s`` on psycopg), the
boolean literals and a substring test. Each piece here takes a ``Dialect``; what really
differs (the claim, batches as arrays, locks, payloads kept beside the row on SQLite, the
monitor's string functions) stays in each store's own ``statements.py``, which builds its
named statements from these.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

from ..types import FINISHED, JobStatus, Outcome
from .base import ListFilter, RetryDelay


class Dialect(NamedTuple):
    p: str  # the placeholder of one parameter
    true: str
    false: str
    contains: str  # "error contains the parameter"
    starts: str  # "{column} starts with the parameter", given the parameter ``starts_n`` times
    starts_n: int
    within: str  # "{column} contains the parameter, in any (ASCII) case"
    id_text: str  # the id as text


SQLITE = Dialect("?", "1", "0", "instr(error, ?) > 0", "substr({column}, 1, length(?))=?", 2,
                 "instr(lower(coalesce({column}, '')), lower(?)) > 0", "CAST(id AS TEXT)")
POSTGRES = Dialect("%s", "true", "false", "strpos(error, %s) > 0", "starts_with({column}, %s)",
                   1, "strpos(lower(coalesce({column}, '')), lower(%s)) > 0", "id::text")


# -- the fence and the writes to a running job ------------------------------------------------

def fence(d: Dialect, table: str = "", job_id: str | None = None, token: str | None = None) -> str:
    """The fence every write for a running job carries: it changes the job only while it is
    still running under the claim's token. Parameters (job id, token), unless given as
    column names (``fence(d, "j", "v.id", "v.token")`` for a join)."""
    t = f"{table}." if table else ""
    return f"{t}id={job_id or d.p} AND {t}status='running' AND {t}token={token or d.p}"


@functools.cache
def complete(d: Dialect) -> str:
    """Parameters: result, now, job id, token."""
    return (f"UPDATE jobq_jobs SET status='succeeded', result={d.p}, finished_at={d.p}, "
            f"lease_until=NULL, cancel_requested={d.false} WHERE {fence(d)}")


@functools.cache
def leave_running(d: Dialect) -> str:
    """A job leaves "running" for another status, with the columns every such move resets.
    Parameters: ``leave_running_params``, or (status, run_at, attempts, error or None,
    finished_at, job id, token)."""
    return (f"UPDATE jobq_jobs SET status={d.p}, run_at={d.p}, attempts={d.p}, "
            f"error=coalesce({d.p}, error), finished_at={d.p}, lease_until=NULL, token=NULL, "
            f"heartbeat_at=NULL, cancel_requested={d.false} WHERE {fence(d)}")


def after_attempt(attempts: int, max_attempts: int, cancel: bool, now: float,
                  retry_delay: RetryDelay) -> tuple[JobStatus, float, float | None]:
    """(status, run_at, finished_at) of a job whose attempt failed or expired: cancelled
    when cancellation was asked for, dead when out of attempts, else pending after backoff."""
    if cancel:
        return JobStatus.CANCELLED, now, now
    if attempts >= max_attempts:
        return JobStatus.DEAD, now, now
    return JobStatus.PENDING, now + max(0.0, retry_delay(attempts)), None


def after_release(attempts: int, cancel: bool, now: float) -> tuple:
    """``leave_running``'s first five parameters for a job given back unfinished: runnable
    now with the attempt not counted, or cancelled when cancellation was asked for; and
    the outcome its attempt row records."""
    if cancel:
        return (str(JobStatus.CANCELLED), now, attempts - 1, None, now), Outcome.CANCELLED
    return (str(JobStatus.PENDING), now, attempts - 1, None, None), Outcome.RELEASED


def leave_running_params(job_id: int, token: int, attempts: int, max_attempts: int,
                         cancel: bool, now: float, retry_delay: RetryDelay, error: str) -> tuple:
    """``leave_running``'s parameters after a failed or expired attempt."""
    status, run_at, finished = after_attempt(attempts, max_attempts, cancel, now, retry_delay)
    return str(status), run_at, attempts, error, finished, job_id, token


@functools.cache
def record_attempt(d: Dialect) -> str:
    """An attempt that ended without success. Parameters: job id, attempt, worker, token,
    started_at, ended_at, outcome, error."""
    return ("INSERT INTO jobq_attempts(job_id, attempt, worker, token, started_at, ended_at, "
            f"outcome, error) VALUES ({', '.join([d.p] * 8)})")


@functools.cache
def progress(d: Dialect) -> str:
    """Parameters: fraction, message, job id, token."""
    return f"UPDATE jobq_jobs SET progress={d.p}, progress_message={d.p} WHERE {fence(d)}"


@functools.cache
def revive(d: Dialect) -> str:
    """A finished (or taken back) job pending again with a fresh allowance; the caller adds
    the WHERE. Parameter: run_at."""
    return (f"UPDATE jobq_jobs SET status='pending', run_at={d.p}, attempts=0, "
            "finished_at=NULL, lease_until=NULL, token=NULL, "
            f"cancel_requested={d.false}, progress=NULL, progress_message=NULL")


# -- listings ---------------------------------------------------------------------------------

ORDER_PENDING = "ORDER BY priority DESC, run_at, id"
"""The claim order, which both pending indexes follow."""

LIST_ORDER = {
    JobStatus.PENDING: ORDER_PENDING[len("ORDER BY "):],
    "scheduled": "run_at, id",
    "retrying": "run_at, id",
    JobStatus.RUNNING: "lease_until, id",
}


def list_conditions(d: Dialect, where: ListFilter, now: float) -> tuple[list[str], list, str]:
    """WHERE fragments for a listing, its parameters and its ORDER BY; each fragment is a
    fixed string, every value a parameter."""
    conds: list[str] = []
    params: list = []
    status = where.status
    if status in ("scheduled", "retrying"):
        conds.append("status='pending'")
        conds.append(f"run_at>{d.p}" if status == "scheduled" else "attempts>0")
        params += [now] if status == "scheduled" else []
    elif status is not None:
        conds.append(f"status={d.p}")
        params.append(str(status))
        if status in FINISHED:  # true for them anyway; lets the finished index serve
            conds.append("finished_at IS NOT NULL")
    for column, value in (("queue", where.queue), ("kind", where.kind), ("worker", where.worker)):
        if value is None:
            continue
        if where.prefix and column != "worker":
            conds.append(d.starts.format(column=column))
            params += [value] * d.starts_n
        else:
            conds.append(f"{column}={d.p}")
            params.append(value)
    for word in where.search:
        conds.append(search(d))
        params += [word] * 5
    if where.error_contains:
        conds.append(d.contains)
        params.append(where.error_contains)
    if status is None:
        order = "id DESC"
    else:
        order = LIST_ORDER.get(status, "finished_at DESC, id DESC")
    return conds, params, order


def list_query(d: Dialect, where: ListFilter, now: float, columns: str) -> tuple[str, list]:
    """``job_list``'s query and parameters: ``columns`` of the matching jobs, one page."""
    conds, params, order = list_conditions(d, where, now)
    query = f"SELECT {columns} FROM jobq_jobs"
    if conds:
        query += " WHERE " + " AND ".join(conds)
    return f"{query} ORDER BY {order} LIMIT {d.p} OFFSET {d.p}", [*params, where.limit,
                                                                  where.offset]


def count_query(d: Dialect, where: ListFilter, now: float) -> tuple[str, list]:
    """``job_count``'s query and parameters."""
    conds, params, _ = list_conditions(d, where, now)
    return "SELECT count(*) FROM jobq_jobs" + (
        " WHERE " + " AND ".join(conds) if conds else ""), params


def dead_filter(where: ListFilter) -> ListFilter:
    """``where`` narrowed to dead jobs (retry_dead, dead_groups), its prefixes and search
    words kept."""
    return replace(where, status=JobStatus.DEAD)


@functools.cache
def search(d: Dialect) -> str:
    """One free word of a search: in the kind, queue, worker or error (ASCII case folded),
    or equal to the id. Parameters: the word, five times. No index helps: it scans the
    rows the other conditions leave until a listing's LIMIT of them match."""
    return "(" + " OR ".join([*(d.within.format(column=c) for c in
                                ("kind", "queue", "worker", "error")),
                              f"{d.id_text}={d.p}"]) + ")"


@functools.cache
def attempts_of(d: Dialect) -> tuple[str, str]:
    """``job_attempts``'s two reads (the ended attempts; the running or succeeded one
    the job row describes). Parameter of each: job id. ``rows.attempts_from_rows`` joins
    them."""
    return ("SELECT job_id, attempt, worker, token, started_at, ended_at, outcome, error "
            f"FROM jobq_attempts WHERE job_id={d.p} ORDER BY seq",
            "SELECT attempts, worker, token, started_at, finished_at, status FROM jobq_jobs "
            f"WHERE id={d.p} AND status IN ('running','succeeded')")


# -- stats: four reads of one snapshot, each on a partial index ------------------------------

@functools.cache
def stats_reads(d: Dialect) -> tuple[str, str, str, str]:
    """(pending by queue: now, now; running by queue: now; dead by queue; recently
    finished by status: since). ``rows.stats_from_rows`` adds them up."""
    return (
        f"SELECT queue, count(*), count(*) FILTER (WHERE run_at>{d.p}), "
        "count(*) FILTER (WHERE attempts>0), "
        f"min(run_at) FILTER (WHERE run_at<={d.p}) FROM jobq_jobs WHERE status='pending' "
        "GROUP BY queue",
        f"SELECT queue, count(*), count(*) FILTER (WHERE lease_until<{d.p}) FROM jobq_jobs "
        "WHERE status='running' GROUP BY queue",
        "SELECT queue, count(*) FROM jobq_jobs WHERE status='dead' GROUP BY queue",
        "SELECT status, count(*) FROM jobq_jobs WHERE status IN "
        f"('succeeded','dead','cancelled') AND finished_at>={d.p} GROUP BY status",
    )


# -- the timer of an idle worker --------------------------------------------------------------

@functools.lru_cache(maxsize=64)
def next_run_at_sql(d: Dialect, n_queues: int) -> str:
    """The earliest ``run_at`` after a given time among pending jobs (of the named queues,
    or of all): what an idle worker sets its timer by. Parameters: ``next_run_at_params``.

    Cheap with a million jobs scheduled: the pending indexes are ordered by priority
    first, so this is a loose index scan, two index seeks per distinct priority (the
    next priority below the last one, and the first ``run_at`` after the time within it),
    never a walk over the backlog. Several queues are one such scan each."""
    p = d.p
    arms = []
    for i in range(max(1, n_queues)):
        q = f"queue={p} AND " if n_queues else ""
        first = "queue, " if n_queues else ""
        arms.append(
            f"pr{i}(p) AS (SELECT (SELECT priority FROM jobq_jobs WHERE {q}status='pending' "
            f"ORDER BY {first}priority DESC LIMIT 1) UNION ALL "
            f"SELECT (SELECT priority FROM jobq_jobs WHERE {q}status='pending' "
            f"AND priority<pr{i}.p ORDER BY {first}priority DESC LIMIT 1) FROM pr{i} "
            f"WHERE pr{i}.p IS NOT NULL)")
    picks = " UNION ALL ".join(
        f"SELECT (SELECT run_at FROM jobq_jobs WHERE {f'queue={p} AND ' if n_queues else ''}"
        f"status='pending' AND priority=pr{i}.p AND run_at>{p} "
        f"ORDER BY {'queue, ' if n_queues else ''}priority DESC, run_at LIMIT 1) AS t "
        f"FROM pr{i} WHERE pr{i}.p IS NOT NULL"
        for i in range(max(1, n_queues)))
    return f"WITH RECURSIVE {', '.join(arms)} SELECT min(t) FROM ({picks}) AS firsts"


def next_run_at_params(queues: Sequence[str], after: float) -> list:
    if not queues:
        return [after]
    return [q for q in queues for _ in range(2)] + [x for q in queues for x in (q, after)]
