"""Workers: each registered worker, its state (ok, late, lost: ``WorkerInfo.state``), how
busy it is and when it last beat. Reads nothing of its own: workers are in every snapshot."""
from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from ...types import WorkerInfo, WorkerState
from ..display import WORKER_BADGES

from .base import Column, Row, RowCache, View, build, limit_for
from .cells import DIM, Cell, Timed, age, badge, fixed, literal, text
from .keys import FORGET
from .snapshot import ROW_LIMIT, Snapshot

_CACHE = RowCache()

COLUMNS = (Column("id", "WORKER", shrink=3, least=16, want=24, middle=True),
           Column("host", "HOST:PID", shrink=2, least=10, want=16, middle=True),
           Column("state", "STATE"), Column("busy", "BUSY"), Column("pool", "POOL", True),
           Column("beat", "BEAT"), Column("queues", "QUEUES", shrink=1, least=6, want=12),
           Column("up", "UP", True))


class Workers(View):
    name, title = "workers", "Workers"
    own_rows = False
    keys = (FORGET,)
    side = True

    def all_columns(self, grouped: bool) -> Sequence[Column]:
        return COLUMNS

    def rows(self, snap: Snapshot, *, wide: bool, beat: float) -> list[Row]:
        f = snap.filter
        held: dict[str, int] = {}
        for j in snap.running:
            held[j.worker or ""] = held.get(j.worker or "", 0) + 1
        complete = len(snap.running) < ROW_LIMIT  # every running job was read
        rows = []
        for w in snap.workers:
            if not (f.worker in (None, w.id)
                    and f.matches(w.id, w.host, w.pid, " ".join(w.queues or ()))):
                continue
            n = held.get(w.id, 0) if complete else None
            lead = w.id == snap.leader
            rows.append(_CACHE.row(w.id, (w, n, lead), wide,
                                   partial(_row, w, wide, beat, n, lead)))
        _CACHE.done(wide)
        return rows


def _row(w: WorkerInfo, wide: bool, beat: float, held: int | None, lead: bool = False) -> Row:
    """``held``: how many running jobs carry its name (None: not all were read); ``lead``:
    it is the maintenance leader (``(leader)`` after its id)."""
    lim = limit_for(wide)
    queues = "*" if w.queues is None else ",".join(w.queues)
    host = Cell(literal(w.host, limit=lim).text, more=((f":{w.pid}", ""),))

    def busy(now: float) -> Cell:
        if w.state(now, beat) == WorkerState.LOST:
            # Its last beat's count, or the jobs still under its name if more: a worker
            # that died holding jobs did not let them go. Marked stale: nobody is counting.
            return text(f"{max(w.busy, held or 0)}/{w.concurrency} stale", DIM)
        # The jobs table is newer than a beat.
        return text(f"{w.busy if held is None else held}/{w.concurrency}")

    return build(COLUMNS, wide, w.id, {
        "id": (Cell(literal(w.id, limit=lim).text, more=((" (leader)", "bold"),)) if lead
               else literal(w.id, limit=lim), w.id),
        "host": (host, (w.host, w.pid)),
        "state": (Timed(lambda now: badge(WORKER_BADGES[w.state(now, beat)])), -w.last_seen),
        "busy": (Timed(busy), w.busy if held is None else held),
        "pool": (text(pool_summary(w)), pool_summary(w)),
        "beat": (Timed(lambda now: fixed(age(now - w.last_seen))), -w.last_seen),
        "queues": (literal(queues, limit=lim), queues),
        "up": (Timed(lambda now: fixed(age(now - w.started_at))), -w.started_at),
    })


def pool_summary(w: WorkerInfo) -> str:
    """``thread``, or ``process 3 busy 1 idle`` from its children at its last beat."""
    if w.pool is None:
        return "-"
    if w.pool != "process" or not w.children:
        return w.pool
    counts: dict[str, int] = {}
    for _pid, state, _job in w.children:
        counts[state] = counts.get(state, 0) + 1
    return "process " + " ".join(f"{n} {state}" for state, n in sorted(counts.items()))


VIEW = Workers()
