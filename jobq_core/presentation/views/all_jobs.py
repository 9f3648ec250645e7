"""All: jobs in any state (``status:`` in the filter picks one), newest first."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from ...types import Hold, Job, JobStatus, WorkerInfo, WorkerState
from ..display import WORKER_BADGES, Badge, job_badge

from .base import Reader, Column, Row, RowCache, View, build, limit_for, narrow
from .cells import (
    Cell, Shown, Timed, age, badge, error_cell, fixed, name_cell, number, tries, worker_cell,
)
from .keys import CANCEL, RETRY, RETRY_ALL
from .why import WHY, Facts, RowFacts, why_cell, why_sort
from .filters import Filter, search_window
from .snapshot import Snapshot

COLUMNS = (Column("id", "ID"), Column("status", "STATUS"),
           Column("kind", "KIND", shrink=4, least=10, want=20),
           Column("queue", "QUEUE", shrink=3, least=6, want=10),
           Column("try", "TRY"), Column("age", "AGE"), WHY,
           Column("worker", "WORKER", True, shrink=2, least=8, want=14, middle=True),
           Column("error", "LAST ERROR", True, shrink=1, least=20, want=40, middle=True))


class AllJobs(View):
    name, title = "all", "All"
    keys = (RETRY, RETRY_ALL, CANCEL)

    def read(self, q: Reader, filt: Filter, grouped: bool) -> tuple[Any, ...]:
        return tuple(q.list(filt.status, **narrow(filt, filt.status)))

    def searched(self, filt: Filter) -> int | None:
        return search_window(filt, filt.status)

    def read_holds(self, q: Reader, rows: tuple[Any, ...]) -> Mapping[int, Hold]:
        """For the WHY column: the keys of the pending jobs that have one, and what the
        waiting jobs wait on (one read for the page)."""
        ids = [j.id for j in rows if j.status == JobStatus.WAITING
               or (j.status == JobStatus.PENDING and j.key is not None)]
        return q.holds(ids) if ids else {}

    def all_columns(self, grouped: bool) -> Sequence[Column]:
        return COLUMNS

    def rows(self, snap: Snapshot, *, wide: bool, beat: float) -> list[Row]:
        f = snap.filter
        workers = {w.id: w for w in snap.workers}
        facts = RowFacts(snap, beat) if wide else None  # the WHY column's
        out: list[Row] = []
        for j in snap.rows:
            if not f.matches(j.id, j.kind, j.queue, j.worker, j.error, j.status):
                continue
            # A running job's row says what its worker's state is: the worker is part of it.
            worker = workers.get(j.worker or "") if j.status == JobStatus.RUNNING else None
            why = None if facts is None else facts.of(j)
            out.append(_CACHE.row(str(j.id), (j, worker, why), wide,
                                  partial(_row, j, worker, why, wide, beat, snap.read_at)))
        _CACHE.done(wide)
        return out


_CACHE = RowCache()


def _row(j: Job, worker: WorkerInfo | None, why: Facts | None, wide: bool, beat: float,
         at: float) -> Row:
    lim = limit_for(wide)

    def status(now: float) -> Cell:
        state = job_badge(j, now)
        judged = None if worker is None else worker.state(now, beat)
        if judged in (WorkerState.LATE, WorkerState.LOST):
            # A running job of a late or lost worker says so: it may never finish there.
            b = WORKER_BADGES[judged]
            state = Badge(b.glyph, f"running, worker {b.word}", b.style)
        return badge(state)

    values: dict[str, tuple[Shown, Any]] = {
        "id": (number(j.id), j.id),
        "status": (Timed(status), str(j.status)),
        "kind": (name_cell(j.kind, lim), j.kind),
        "queue": (name_cell(j.queue, lim // 2 + 2), j.queue),
        "try": (tries(j), j.attempts),
        "age": (Timed(lambda now: fixed(age(now - j.created_at))), -j.created_at),
        "worker": (Timed(lambda now: worker_cell(
            j.worker, None if worker is None else worker.state(now, beat), lim)),
            j.worker or ""),
        "error": error_cell(j),
    }
    if why is not None:
        values["why"] = (why_cell(j, beat, worker=worker, facts=why), why_sort(j, why, at))
    return build(COLUMNS, wide, str(j.id), values, job_id=j.id)


VIEW = AllJobs()
