"""Schedules: the periodic schedules the workers have recorded, with the last tick
enqueued and a countdown to the next one (moved by the 1 Hz tick, no read)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...schedule import Schedule
from ...types import ScheduleInfo
from ..display import countdown, timestamp

from .base import Reader, Column, Row, View, build, limit_for
from .cells import DIM, WARN, Cell, Timed, age, literal, text
from .filters import Filter
from .snapshot import ROW_LIMIT, Snapshot

COLUMNS = (Column("kind", "KIND"), Column("queue", "QUEUE"), Column("spec", "SCHEDULE"),
           Column("last", "LAST TICK"), Column("next", "NEXT IN"), Column("job", "JOB", True),
           Column("at", "NEXT AT", True))


class Schedules(View):
    name, title = "schedules", "Schedules"

    def read(self, q: Reader, filt: Filter, grouped: bool) -> tuple[Any, ...]:
        return tuple(q.schedules()[:ROW_LIMIT])

    def all_columns(self, grouped: bool) -> Sequence[Column]:
        return COLUMNS

    def rows(self, snap: Snapshot, *, wide: bool, beat: float) -> list[Row]:
        f = snap.filter
        return [_row(s, wide) for s in snap.rows
                if f.queue in (None, s.queue) and f.kind in (None, s.kind)
                and f.matches(s.kind, s.queue, s.spec)]


def _row(s: ScheduleInfo, wide: bool) -> Row:
    lim = limit_for(wide)
    schedule = Schedule.from_info(s)
    enqueued = s.last_job is not None and s.last_tick is not None

    def last(now: float) -> Cell:
        # A tick more than one period late: no worker with this schedule is running.
        late = (schedule is not None and s.last_tick is not None
                and schedule.latest_tick(now) > schedule.next_tick(s.last_tick) + 5)
        said = f"{age(now - s.last_tick)} ago" if enqueued and s.last_tick is not None else "-"
        if late:
            return Cell(said, WARN, more=((" ! no worker?", WARN),))
        return text(said)

    def next_in(now: float) -> Cell:
        if schedule is None:
            return text("?", DIM)
        return text(countdown(max(0.0, schedule.next_tick(now) - now)))

    def next_at(now: float) -> Cell:
        return text("?" if schedule is None else timestamp(schedule.next_tick(now)))

    # Sorted by the tick after the last one (a sort value does not move with the clock).
    after_last = 0.0 if schedule is None else schedule.next_tick(s.last_tick or s.updated_at)
    return build(COLUMNS, wide, s.key, {
        "kind": (literal(s.kind, limit=lim), s.kind),
        "queue": (literal(s.queue, limit=lim), s.queue),
        "spec": (literal(s.spec, limit=40), s.spec),
        "last": (Timed(last), s.last_tick if enqueued else 0.0),
        "next": (Timed(next_in), after_last),
        "job": (text("-" if s.last_job is None else str(s.last_job)), s.last_job or 0),
        "at": (Timed(next_at), after_last),
    })


VIEW = Schedules()
