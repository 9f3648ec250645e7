"""Queues: per queue, how many jobs wait, run and died, and how long the oldest ready job
has waited (lag). Reads nothing of its own: the counts are in every snapshot's stats."""
from __future__ import annotations

from jobq_core import QueueStats

from .base import Column, Row, View, build
from .cells import BAD, age, literal, number, text

COLUMNS = (Column("queue", "QUEUE", shrink=1, least=10), Column("pending", "PENDING"), Column("running", "RUNNING"),
           Column("dead", "DEAD"), Column("lag", "LAG"))


class Queues(View):
    name, title = "queues", "Queues"
    own_rows = False

    def all_columns(self, grouped):
        return COLUMNS

    def rows(self, snap, now, *, wide, beat):
        f = snap.filter
        return [_row(name, qs, now) for name, qs in snap.stats.queues.items()
                if f.names(name, None) and f.matches(name)]


def _row(name: str, qs: QueueStats, now: float) -> Row:
    lag = None if qs.oldest_pending_at is None else now - qs.oldest_pending_at
    return build(COLUMNS, True, name, {
        "queue": (literal(name, limit=40), name),
        "pending": (number(qs.pending), qs.pending),
        "running": (number(qs.running), qs.running),
        "dead": (number(qs.dead, BAD if qs.dead else ""), qs.dead),
        "lag": (text(age(lag)), lag or 0.0),
    })


VIEW = Queues()
