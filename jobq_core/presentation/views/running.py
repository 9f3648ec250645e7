"""Running: jobs under a lease, with their lease countdown, heartbeat and progress.

Reads nothing of its own: every snapshot holds the running jobs, unfiltered (the header's
expired-lease warning must see them all), so the filter is applied here, in full. A job
whose worker is late or lost says so in its WORKER cell.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from ...types import Job, WorkerInfo
from ..display import countdown
from .cells import NOTE, Cell

from .base import Column, Row, RowCache, View, build, limit_for
from .cells import (
    Timed, age, fixed, lease_cell, name_cell, progress_cell, tries, worker_cell,
)
from .keys import CANCEL, TAKE_BACK
from .why import WHY, why_cell, why_sort
from .snapshot import Snapshot

COLUMNS = (
    Column("id", "ID"), Column("kind", "KIND", shrink=4, least=10, want=20),
    Column("queue", "QUEUE", shrink=2, least=6, want=10),
    Column("worker", "WORKER", shrink=3, least=10, want=16, middle=True),
    Column("try", "TRY"), Column("runtime", "RUNTIME"), Column("lease", "LEASE"), WHY,
    Column("beat", "BEAT", True), Column("progress", "PROGRESS", True, shrink=1, least=10),
)


class Running(View):
    name, title = "running", "Running"
    keys = (TAKE_BACK, CANCEL)
    own_rows = False

    def all_columns(self, grouped: bool) -> Sequence[Column]:
        return COLUMNS

    def rows(self, snap: Snapshot, *, wide: bool, beat: float) -> list[Row]:
        f = snap.filter
        workers = {w.id: w for w in snap.workers}
        out = []
        for j in snap.running:
            if not (f.names(j.queue, j.kind) and f.worker in (None, j.worker)
                    and f.key in (None, j.key)
                    and (not f.error or f.error in (j.error or ""))
                    and f.matches(j.id, j.kind, j.queue, j.worker, j.progress_message)):
                continue
            worker = workers.get(j.worker or "")
            out.append(_CACHE.row(str(j.id), (j, worker), wide,
                                  partial(_row, j, worker, wide, beat)))
        _CACHE.done(wide)
        return out


_CACHE = RowCache()


def _row(j: Job, worker: WorkerInfo | None, wide: bool, beat: float) -> Row:
    lim = limit_for(wide)
    ident = Cell(str(j.id), right=True)
    if j.cancel_requested and not wide:  # no PROGRESS column to say so
        ident = Cell(f"⊘{j.id}", NOTE, right=True)
    started = j.started_at
    return build(COLUMNS, wide, str(j.id), {
        "id": (ident, j.id),
        "kind": (name_cell(j.kind, lim), j.kind),
        "queue": (name_cell(j.queue, lim // 2 + 2), j.queue),
        "worker": (Timed(lambda now: worker_cell(
            j.worker, None if worker is None else worker.state(now, beat), lim)),
            j.worker or ""),
        "try": (tries(j), j.attempts),
        "runtime": (Timed(lambda now: fixed(countdown(now - (started or now)))),
                    -(started or 0.0)),
        "lease": (Timed(lambda now: lease_cell(j, now)), j.lease_until or 0.0),
        "beat": (Timed(lambda now: fixed(age(now - j.heartbeat_at) if j.heartbeat_at
                                        else "-")), -(j.heartbeat_at or 0.0)),
        "progress": (progress_cell(j), j.progress or 0.0),
        "why": (why_cell(j, beat, worker=worker), why_sort(j)),
    }, job_id=j.id)


VIEW = Running()
