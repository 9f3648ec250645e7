"""Dead: jobs that used up their attempts. Grouped by error by default (one bad deploy is
one row with a count, ``ErrorGroup``); ``d`` shows one row per job instead."""
from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from ...common.error_groups import group_key
from ...types import ErrorGroup, Job

from .base import Reader, Column, Row, RowCache, View, build, limit_for, narrow
from .cells import BAD, Timed, age, error_cell, fixed, literal, name_cell, number, tries
from .keys import GROUP, RETRY, RETRY_ALL
from .filters import Filter
from .snapshot import ROW_LIMIT, Snapshot

JOB_COLUMNS = (Column("id", "ID"), Column("kind", "KIND", shrink=3, least=10, want=16),
               Column("queue", "QUEUE", shrink=2, least=6, want=10),
               Column("try", "TRY"), Column("when", "DIED"),
               Column("error", "LAST ERROR", shrink=1, least=20, want=36, middle=True))
GROUP_COLUMNS = (Column("count", "COUNT"), Column("kind", "KIND", shrink=3, least=10, want=16),
                 Column("queues", "QUEUES", True, shrink=2, least=8, want=16),
                 Column("last", "LAST"),
                 Column("error", "ERROR", shrink=1, least=24, want=40, middle=True))


class Dead(View):
    name, title = "dead", "Dead"
    keys = (GROUP, RETRY, RETRY_ALL)
    regroup_every = 5.0  # grouping reads every dead job's error: not every second

    def read(self, q: Reader, filt: Filter, grouped: bool) -> tuple[Any, ...]:
        if grouped:  # the groups of the dead jobs the filter selects, its words included
            return tuple(q.dead_groups(queue=filt.queue, kind=filt.kind,
                                       error_contains=filt.error, limit=ROW_LIMIT,
                                       prefix=filt.prefix, search=filt.words,
                                       key=filt.key))
        return tuple(q.list("dead", **narrow(filt, "dead")))

    def all_columns(self, grouped: bool) -> Sequence[Column]:
        return GROUP_COLUMNS if grouped else JOB_COLUMNS

    def rows(self, snap: Snapshot, *, wide: bool, beat: float) -> list[Row]:
        f = snap.filter
        out = []
        if snap.grouped:  # the words were searched for in the database (``read``)
            for g in snap.rows:
                out.append(_CACHE.row(_group_key(g), g, wide, partial(_group_row, g, wide)))
        else:
            for j in snap.rows:
                if (f.matches(j.id, j.kind, j.queue, j.worker, j.error, j.status)
                        and (f.group is None or group_key(j.error) == f.group)):
                    out.append(_CACHE.row(str(j.id), j, wide, partial(_job_row, j, wide)))
        _CACHE.done(wide)
        return out


_CACHE = RowCache()


def _group_key(g: ErrorGroup) -> str:
    return f"g:{g.kind}\x00{g.key}\x00{g.last_id}"


def _ago(t: float | None) -> Timed:
    """``12s ago``, ``4m ago``: how long ago ``t`` was."""
    return Timed(lambda now: fixed(f"{age(now - (t if t is not None else now))} ago"))


def _group_row(g: ErrorGroup, wide: bool) -> Row:
    lim = limit_for(wide)
    return build(GROUP_COLUMNS, wide, _group_key(g), {
        "count": (number(g.count, BAD), g.count),
        "kind": (name_cell(g.kind, lim), g.kind),
        "queues": (literal(",".join(g.queues), limit=lim), g.queues),
        "last": (_ago(g.last_finished_at), -g.last_finished_at),
        "error": (literal(g.line, limit=120), g.line),
    }, job_id=g.last_id, group=g)


def _job_row(j: Job, wide: bool) -> Row:
    lim = limit_for(wide)
    return build(JOB_COLUMNS, wide, str(j.id), {
        "id": (number(j.id), j.id),
        "kind": (name_cell(j.kind, lim), j.kind),
        "queue": (name_cell(j.queue, lim // 2 + 2), j.queue),
        "try": (tries(j), j.attempts),
        "when": (_ago(j.finished_at), -(j.finished_at or 0)),
        "error": error_cell(j),
    }, job_id=j.id)


VIEW = Dead()
