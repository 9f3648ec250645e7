"""A listing's SQL, whose shape follows its filter: the WHERE fragments of ``list``,
``count``, ``dead_groups`` and ``retry_dead`` (``ListFilter``), their order, and the
statements built from them. Each fragment is a fixed string, every value a parameter;
what has no common spelling is a dialect's ``Matching``."""
from __future__ import annotations

from ..types import FINISHED, JobStatus
from .base import ListFilter
from .sql import ORDER_PENDING, REVIVE

LIST_ORDER = {
    JobStatus.PENDING: ORDER_PENDING[len("ORDER BY "):],
    "scheduled": "run_at, id",
    "retrying": "run_at, id",
    JobStatus.RUNNING: "lease_until, id",
}


class Matching:
    """Fragments of a listing's WHERE that have no common spelling; each dialect has one."""

    contains = "instr(error, ?) > 0"  # "error contains the parameter"
    starts = "substr({column}, 1, length(?))=?"  # "{column} starts with the parameter",
    starts_n = 2  # given the parameter this many times
    within = "instr(lower(coalesce({column}, '')), lower(?)) > 0"  # ... in any (ASCII) case
    id_text = "CAST(id AS TEXT)"


def list_conditions(m: type[Matching] | Matching, where: ListFilter, now: float,
                    ) -> tuple[list[str], list[object], str]:
    """WHERE fragments for a listing (``?`` placeholders), its parameters and its ORDER BY;
    each fragment is a fixed string, every value a parameter."""
    conds: list[str] = []
    params: list[object] = []
    status = where.status
    if status in ("scheduled", "retrying"):
        conds.append("status='pending'")
        conds.append("run_at>?" if status == "scheduled" else "attempts>0")
        params += [now] if status == "scheduled" else []
    elif status is not None:
        conds.append("status=?")
        params.append(str(status))
        if status in FINISHED:  # true for them anyway; lets the finished index serve
            conds.append("finished_at IS NOT NULL")
    for column, value in (("queue", where.queue), ("kind", where.kind), ("worker", where.worker)):
        if value is None:
            continue
        if where.prefix and column != "worker":
            conds.append(m.starts.format(column=column))
            params += [value] * m.starts_n
        else:
            conds.append(f"{column}=?")
            params.append(value)
    for word in where.search:
        # in the kind, queue, worker or error (ASCII case folded), or equal to the id. No
        # index helps: it scans the rows the other conditions leave until a listing's
        # LIMIT of them match.
        conds.append("(" + " OR ".join([*(m.within.format(column=c) for c in
                                          ("kind", "queue", "worker", "error")),
                                        f"{m.id_text}=?"]) + ")")
        params += [word] * 5
    if where.error_contains:
        conds.append(m.contains)
        params.append(where.error_contains)
    if where.key is not None:
        conds.append("key=?")
        params.append(where.key)
    if where.newest is not None:
        # An index range: the newest ids (max(id) is one index lookup), however many
        # older jobs a text search would otherwise read through.
        conds.append("id>(SELECT coalesce(max(id), 0) FROM jobq_jobs)-?")
        params.append(where.newest)
    order = "id DESC" if status is None else LIST_ORDER.get(status, "finished_at DESC, id DESC")
    return conds, params, order


def listing(conds: list[str], order: str, columns: str) -> str:
    """``job_list``: ``columns`` of the jobs matching ``conds``, one page (LIMIT, OFFSET)."""
    where = f" WHERE {' AND '.join(conds)}" if conds else ""
    return f"SELECT {columns} FROM jobq_jobs{where} ORDER BY {order} LIMIT ? OFFSET ?"


def counting(conds: list[str]) -> str:
    return "SELECT count(*) FROM jobq_jobs" + (f" WHERE {' AND '.join(conds)}" if conds else "")


def revive_matching(conds: list[str], keyed: bool) -> str:
    """``job_retry_dead``'s bulk move: the matching dead jobs without a unique key
    (``keyed`` False), or the ids of those with one (each moved on its own)."""
    match = " AND ".join(conds)
    if keyed:
        return f"SELECT id FROM jobq_jobs WHERE {match} AND unique_key IS NOT NULL ORDER BY id"
    return f"{REVIVE} WHERE {match} AND unique_key IS NULL RETURNING queue"
