"""Dead: jobs that used up their attempts. Grouped by error by default (one bad deploy is
one row with a count, ``ErrorGroup``); ``d`` shows one row per job instead."""
from __future__ import annotations

from rich.text import Text

from jobq_core import ErrorGroup, Job
from jobq_core.error_groups import group_key

from .base import ROW_LIMIT, Column, RowCache, View, build, limit_for, narrow
from .cells import BAD, age, error_cell, literal, number, text, tries

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
    groups = True
    retries = True
    regroup_every = 5.0  # grouping reads every dead job's error: not every second

    def read(self, q, filt, grouped):
        if grouped:
            return tuple(q.dead_groups(queue=filt.queue, kind=filt.kind,
                                       error_contains=filt.error, limit=ROW_LIMIT,
                                       prefix=filt.prefix))
        return tuple(q.list("dead", **narrow(filt)))

    def all_columns(self, grouped):
        return GROUP_COLUMNS if grouped else JOB_COLUMNS

    def rows(self, snap, now, *, wide, beat):
        f = snap.filter
        out = []
        if snap.grouped:
            for g in snap.rows:
                if f.matches(g.kind, g.line, " ".join(g.queues)):
                    last = f"{age(now - g.last_finished_at)} ago"
                    out.append(_CACHE.row(_group_key(g), g, wide, (last,),
                                          lambda g=g: _group_still(g, wide),
                                          lambda cells, g=g, t=last: build(
                                              GROUP_COLUMNS, wide, _group_key(g),
                                              {**cells, "last": (text(t), -g.last_finished_at)},
                                              job_id=g.last_id, group=g)))
        else:
            for j in snap.rows:
                if (f.matches(j.id, j.kind, j.queue, j.worker, j.error, j.status)
                        and (f.group is None or group_key(j.error) == f.group)):
                    shown = f"{age(now - (j.finished_at or now))} ago"
                    out.append(_CACHE.row(str(j.id), j, wide, (shown,),
                                          lambda j=j: _job_still(j, wide),
                                          lambda cells, j=j, t=shown: build(
                                              JOB_COLUMNS, wide, str(j.id),
                                              {**cells, "when": (text(t), -(j.finished_at or 0))},
                                              job_id=j.id)))
        _CACHE.done(wide)
        return out


_CACHE = RowCache()


def _group_key(g: ErrorGroup) -> str:
    return f"g:{g.kind}\x00{g.key}\x00{g.last_id}"


def _group_still(g: ErrorGroup, wide: bool) -> dict[str, tuple[Text, object]]:
    """A group's cells that do not move with the clock."""
    lim = limit_for(wide)
    return {
        "count": (Text(f"{g.count}", BAD, justify="right"), g.count),
        "kind": (literal(g.kind, limit=lim), g.kind),
        "queues": (literal(",".join(g.queues), limit=lim), g.queues),
        "error": (literal(g.line, limit=120), g.line),
    }


def _job_still(j: Job, wide: bool) -> dict[str, tuple[Text, object]]:
    """A dead job's cells that do not move with the clock."""
    lim = limit_for(wide)
    return {
        "id": (number(j.id), j.id),
        "kind": (literal(j.kind, limit=lim), j.kind),
        "queue": (literal(j.queue, limit=lim // 2 + 2), j.queue),
        "try": (tries(j), j.attempts),
        "error": error_cell(j),
    }


VIEW = Dead()
