"""All: jobs in any state (``status:`` in the filter picks one), newest first."""
from __future__ import annotations

from rich.text import Text

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
        out: list[Row] = []
        for j in snap.rows:
            if not f.matches(j.id, j.kind, j.queue, j.worker, j.error, j.status):
                continue
            worker = states.get(j.worker or "") if j.status == JobStatus.RUNNING else None
            created = age(now - j.created_at)
            state = job_badge(j, now)
            out.append(_CACHE.row(str(j.id), j, wide, (created, state.word, worker),
                                  lambda j=j: _still(j, wide),
                                  lambda cells, j=j, c=created, s=state, w=worker:
                                      _row(cells, j, wide, c, s, w)))
        _CACHE.done(wide)
        return out


_CACHE = RowCache()


def _still(j: Job, wide: bool) -> dict[str, tuple[Text, object]]:
    """The cells that do not move with the clock."""
    lim = limit_for(wide)
    return {
        "id": (number(j.id), j.id),
        "kind": (literal(j.kind, limit=lim), j.kind),
        "queue": (literal(j.queue, limit=lim // 2 + 2), j.queue),
        "try": (tries(j), j.attempts),
        "error": error_cell(j),
    }


def _row(cells: dict, j: Job, wide: bool, created: str, state: Badge,
         worker: WorkerState | None) -> Row:
    shown = state
    if worker in (WorkerState.LATE, WorkerState.LOST):
        # A running job of a late or lost worker says so: it may never finish there.
        b = WORKER_BADGES[worker]
        shown = Badge(b.glyph, f"running, worker {b.word}", b.style)
    return build(COLUMNS, wide, str(j.id), {
        **cells,
        "status": (badge(shown), state.word),
        "age": (text(created), -j.created_at),
        "worker": (worker_cell(j.worker, worker, limit_for(wide)), j.worker or ""),
    }, job_id=j.id)


VIEW = AllJobs()
