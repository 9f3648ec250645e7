"""Schedules: the periodic schedules the workers have recorded, with the last tick
enqueued and a countdown to the next one (moved by the 1 Hz tick, no read)."""
from __future__ import annotations

from rich.text import Text

from jobq_core import Schedule, ScheduleInfo
from jobq_core.presentation.display import countdown, timestamp

from .base import ROW_LIMIT, Column, Row, View, build, limit_for
from .cells import DIM, WARN, Timed, age, literal, text

COLUMNS = (Column("kind", "KIND"), Column("queue", "QUEUE"), Column("spec", "SCHEDULE"),
           Column("last", "LAST TICK"), Column("next", "NEXT IN"), Column("job", "JOB", True),
           Column("at", "NEXT AT", True))


class Schedules(View):
    name, title = "schedules", "Schedules"

    def read(self, q, filt, grouped):
        return tuple(q.schedules()[:ROW_LIMIT])

    def all_columns(self, grouped):
        return COLUMNS

    def rows(self, snap, *, wide, beat):
        f = snap.filter
        return [_row(s, wide) for s in snap.rows
                if f.queue in (None, s.queue) and f.kind in (None, s.kind)
                and f.matches(s.kind, s.queue, s.spec)]


def _row(s: ScheduleInfo, wide: bool) -> Row:
    lim = limit_for(wide)
    schedule = Schedule.from_info(s)
    enqueued = s.last_job is not None and s.last_tick is not None

    def last(now: float) -> Text:
        # A tick more than one period late: no worker with this schedule is running.
        late = (schedule is not None and s.last_tick is not None
                and schedule.latest_tick(now) > schedule.next_tick(s.last_tick) + 5)
        cell = text(f"{age(now - s.last_tick)} ago" if enqueued else "-",
                    WARN if late else "")
        if late:
            cell.append(" ! no worker?", WARN)
        return cell

    def next_in(now: float) -> Text:
        if schedule is None:
            return text("?", DIM)
        return text(countdown(max(0.0, schedule.next_tick(now) - now)))

    def next_at(now: float) -> Text:
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
