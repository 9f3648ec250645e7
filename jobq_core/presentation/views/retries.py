"""Retries: pending jobs that failed before, with their next run and their last error."""
from __future__ import annotations

from collections.abc import Sequence
from functools import partial
import math

from typing import Any

from ...types import Job

from .base import Reader, Column, Row, RowCache, View, build, limit_for, narrow
from .cells import WARN, Cell, Timed, age, error_cell, fixed, name_cell, number, tries
from .keys import CANCEL
from .filters import Filter
from .snapshot import Snapshot

COLUMNS = (Column("id", "ID"), Column("kind", "KIND", shrink=3, least=10, want=16),
           Column("queue", "QUEUE", shrink=2, least=6, want=10),
           Column("try", "TRY"), Column("next", "NEXT RUN"),
           Column("error", "LAST ERROR", shrink=1, least=20, want=36, middle=True))


class Retries(View):
    name, title = "retries", "Retries"
    keys = (CANCEL,)

    def read(self, q: Reader, filt: Filter, grouped: bool) -> tuple[Any, ...]:
        return tuple(q.list("retrying", **narrow(filt, "retrying")))

    def all_columns(self, grouped: bool) -> Sequence[Column]:
        return COLUMNS

    def rows(self, snap: Snapshot, *, wide: bool, beat: float) -> list[Row]:
        f = snap.filter
        out = []
        for j in snap.rows:
            if f.matches(j.id, j.kind, j.queue, j.worker, j.error, j.status):
                out.append(_CACHE.row(str(j.id), j, wide, partial(_row, j, wide)))
        _CACHE.done(wide)
        return out


_CACHE = RowCache()


def _row(j: Job, wide: bool) -> Row:
    lim = limit_for(wide)

    def next_run(now: float) -> Cell:
        wait = _next_run(j.run_at - now)
        return fixed(wait) if wait else fixed("due now", WARN)

    return build(COLUMNS, wide, str(j.id), {
        "id": (number(j.id), j.id),
        "kind": (name_cell(j.kind, lim), j.kind),
        "queue": (name_cell(j.queue, lim // 2 + 2), j.queue),
        "try": (tries(j), j.attempts),
        "next": (Timed(next_run), j.run_at),
        "error": error_cell(j),
    }, job_id=j.id)


def _next_run(wait: float) -> str | None:
    """``in 42s``, ``in 4m``: seconds only in the last minute, where they matter (a cell
    that changes every second costs a redraw every second)."""
    if wait <= 0:
        return None
    return f"in {age(math.ceil(wait))}" if wait < 60 else f"in {age(wait + 59)}"


VIEW = Retries()
