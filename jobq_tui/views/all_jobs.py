"""All: jobs in any state (``status:`` in the filter picks one), newest first."""
from __future__ import annotations

from jobq_core import Job
from jobq_core.display import job_badge

from .base import Column, Row, View, build, limit_for, narrow
from .cells import age, badge, error_cell, literal, number, text, tries

COLUMNS = (Column("id", "ID"), Column("status", "STATUS"), Column("kind", "KIND"),
           Column("queue", "QUEUE"), Column("try", "TRY"), Column("age", "AGE"),
           Column("worker", "WORKER", True), Column("error", "LAST ERROR", True))


class AllJobs(View):
    name, title = "all", "All"
    retries = True

    def read(self, q, filt, grouped):
        return tuple(q.list(filt.status, **narrow(filt)))

    def all_columns(self, grouped):
        return COLUMNS

    def rows(self, snap, now, *, wide, beat):
        f = snap.filter
        return [_row(j, now, wide) for j in snap.rows
                if f.matches(j.id, j.kind, j.queue, j.worker, j.error, j.status)]


def _row(j: Job, now: float, wide: bool) -> Row:
    lim = limit_for(wide)
    state = job_badge(j, now)
    return build(COLUMNS, wide, str(j.id), {
        "id": (number(j.id), j.id),
        "status": (badge(state), state.word),
        "kind": (literal(j.kind, limit=lim), j.kind),
        "queue": (literal(j.queue, limit=lim // 2 + 2), j.queue),
        "try": (tries(j), j.attempts),
        "age": (text(age(now - j.created_at)), -j.created_at),
        "worker": (literal(j.worker, limit=lim), j.worker or ""),
        "error": error_cell(j),
    }, job_id=j.id)


VIEW = AllJobs()
