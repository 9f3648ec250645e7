"""Running: jobs under a lease, with their lease countdown, heartbeat and progress.

Reads nothing of its own: every snapshot holds the running jobs, unfiltered (the header's
expired-lease warning must see them all), so the filter is applied here, in full. A job
whose worker is late or lost says so in its WORKER cell.
"""
from __future__ import annotations

from rich.text import Text

from jobq_core import Job, WorkerState
from jobq_core.display import countdown

from .base import Column, Row, RowCache, View, build, limit_for
from .cells import (
    age, lease_cell, literal, progress_cell, text, tries, worker_cell, worker_states,
)

COLUMNS = (
    Column("id", "ID"), Column("kind", "KIND", shrink=4, least=10, want=20),
    Column("queue", "QUEUE", shrink=2, least=6, want=10),
    Column("worker", "WORKER", shrink=3, least=10, want=16, middle=True),
    Column("try", "TRY"), Column("runtime", "RUNTIME"), Column("lease", "LEASE"),
    Column("beat", "BEAT", True), Column("progress", "PROGRESS", True, shrink=1, least=10),
)


class Running(View):
    takes_back = True
    name, title = "running", "Running"
    own_rows = False

    def all_columns(self, grouped):
        return COLUMNS

    def rows(self, snap, now, *, wide, beat):
        f = snap.filter
        states = worker_states(snap.workers, now, beat)
        out = []
        for j in snap.running:
            if not (f.names(j.queue, j.kind) and f.worker in (None, j.worker)
                    and (not f.error or f.error in (j.error or ""))
                    and f.matches(j.id, j.kind, j.queue, j.worker, j.progress_message)):
                continue
            worker = states.get(j.worker or "")
            runtime = now - (j.started_at or now)
            lease = lease_cell(j, now)
            beat_age = age(now - j.heartbeat_at) if j.heartbeat_at else "-"
            moving = (countdown(runtime), lease.plain, str(lease.style), beat_age, worker)
            out.append(_CACHE.row(
                str(j.id), j, wide, moving, lambda j=j: _still(j, wide),
                lambda cells, j=j, w=worker, r=runtime, le=lease, b=beat_age:
                    _row(cells, j, wide, w, r, le, b)))
        _CACHE.done(wide)
        return out


_CACHE = RowCache()


def _still(j: Job, wide: bool) -> dict[str, tuple[Text, object]]:
    """The cells that do not move with the clock."""
    lim = limit_for(wide)
    ident = Text(str(j.id), justify="right", no_wrap=True)
    if j.cancel_requested and not wide:  # no PROGRESS column to say so
        ident = Text(f"⊘{j.id}", justify="right", style="magenta")
    return {
        "id": (ident, j.id),
        "kind": (literal(j.kind, limit=lim), j.kind),
        "queue": (literal(j.queue, limit=lim // 2 + 2), j.queue),
        "try": (tries(j), j.attempts),
        "progress": (progress_cell(j), j.progress or 0.0),
    }


def _row(cells: dict, j: Job, wide: bool, worker: WorkerState | None, runtime: float,
         lease: Text, beat_age: str) -> Row:
    return build(COLUMNS, wide, str(j.id), {
        **cells,
        "worker": (worker_cell(j.worker, worker, limit_for(wide)), j.worker or ""),
        "runtime": (text(countdown(runtime)), runtime),
        "lease": (lease, j.lease_until or 0.0),
        "beat": (text(beat_age), -(j.heartbeat_at or 0.0)),
    }, job_id=j.id)


VIEW = Running()
