"""All: jobs in any state (``status:`` in the filter picks one), newest first."""
from __future__ import annotations

from jobq_core import Job, JobStatus, WorkerState
from jobq_core.display import WORKER_BADGES, Badge, job_badge

from .base import Column, Row, RowCache, View, build, limit_for, narrow
from .cells import (
    age, badge, error_cell, literal, number, text, tries, worker_cell, worker_states,
)

COLUMNS = (Column("id", "ID"), Column("status", "STATUS"),
           Column("kind", "KIND", shrink=4, least=10, want=20),
           Column("queue", "QUEUE", shrink=3, least=6, want=10),
           Column("try", "TRY"), Column("age", "AGE"),
           Column("worker", "WORKER", True, shrink=2, least=8, want=14, middle=True),
           Column("error", "LAST ERROR", True, shrink=1, least=20, want=40, middle=True))


class AllJobs(View):
    name, title = "all", "All"
    retries = True

    def read(self, q, filt, grouped):
        return tuple(q.list(filt.status, **narrow(filt)))

    def all_columns(self, grouped):
        return COLUMNS

    def rows(self, snap, now, *, wide, beat):
        f = snap.filter
        states = worker_states(snap.workers, now, beat)
        out = []
        for j in snap.rows:
            if not f.matches(j.id, j.kind, j.queue, j.worker, j.error, j.status):
                continue
            worker = states.get(j.worker or "") if j.status == JobStatus.RUNNING else None
            moving = (age(now - j.created_at), job_badge(j, now).word, worker)
            out.append(_CACHE.row(j, wide, moving, lambda j=j: _row(j, now, wide, states)))
        _CACHE.done(wide)
        return out


_CACHE = RowCache()


def _row(j: Job, now: float, wide: bool, workers: dict[str, WorkerState]) -> Row:
    lim = limit_for(wide)
    state = job_badge(j, now)
    shown = state
    running = j.status == JobStatus.RUNNING
    if running and workers.get(j.worker or "") in (WorkerState.LATE,
                                                                       WorkerState.LOST):
        # A running job of a late or lost worker says so: it may never finish there.
        b = WORKER_BADGES[workers[j.worker or ""]]
        shown = Badge(b.glyph, f"running, worker {b.word}", b.style)
    return build(COLUMNS, wide, str(j.id), {
        "id": (number(j.id), j.id),
        "status": (badge(shown), state.word),
        "kind": (literal(j.kind, limit=lim), j.kind),
        "queue": (literal(j.queue, limit=lim // 2 + 2), j.queue),
        "try": (tries(j), j.attempts),
        "age": (text(age(now - j.created_at)), -j.created_at),
        "worker": (worker_cell(j.worker, workers.get(j.worker or "") if running else None, lim),
                   j.worker or ""),
        "error": error_cell(j),
    }, job_id=j.id)


VIEW = AllJobs()
