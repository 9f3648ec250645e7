"""Queues: per queue, how many jobs wait, run and died, how long the oldest ready job that
could run has waited (lag), how many ready jobs are held on purpose (HELD, in the wide
layout: a paused queue's, or behind a busy or ordered key; they count in no lag), and the
operator's controls: ``⏸ paused``, and the limits beside the
running count (``3/3 limit``: running at its concurrency limit), so "slow because
limited" reads apart from "slow because stuck". ``≠ code`` in STATE marks a queue whose
limits differ from those its code declares (``Registry.queue``); LIMITS (wide) shows both. ``P`` pauses or resumes the selected
queue (``pauses``). Reads nothing of its own: counts and controls are in every
snapshot's stats."""
from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from ...types import QueueStats
from ..display import drift_text, limits_text

from .base import Column, Row, RowCache, View, build
from .cells import BAD, DIM, WARN, Cell, Timed, age, fixed, literal, number, text
from .keys import PAUSE_QUEUE
from .snapshot import Snapshot

COLUMNS = (Column("queue", "QUEUE", shrink=1, least=10), Column("state", "STATE"),
           Column("pending", "PENDING"), Column("held", "HELD", True), Column("running", "RUNNING"),
           Column("dead", "DEAD"),
           Column("lag", "LAG"), Column("limits", "LIMITS", True))


class Queues(View):
    name, title = "queues", "Queues"
    own_rows = False
    keys = (PAUSE_QUEUE,)
    side = True

    def all_columns(self, grouped: bool) -> Sequence[Column]:
        return COLUMNS

    def rows(self, snap: Snapshot, *, wide: bool, beat: float) -> list[Row]:
        f = snap.filter
        rows = [_CACHE.row(name, qs, wide, partial(_row, name, qs, wide))
                for name, qs in snap.stats.queues.items()
                if f.names(name, None) and f.matches(name)]
        _CACHE.done(wide)
        return rows


_CACHE = RowCache()


def running_cell(qs: QueueStats) -> Cell:
    """``2``; ``2/3`` under a concurrency limit; ``3/3 limit`` at it."""
    if qs.concurrency is None:
        return number(qs.running)
    if qs.running >= qs.concurrency:
        return Cell(f"{qs.running}/{qs.concurrency} limit", WARN, right=True)
    return Cell(f"{qs.running}/{qs.concurrency}", right=True)


def _row(name: str, qs: QueueStats, wide: bool) -> Row:
    oldest = qs.oldest_pending_at
    if qs.drift:  # the database holds other limits than the code declares
        state = text("⏸ paused ≠ code" if qs.paused else "≠ code", WARN)
    else:
        state = text("⏸ paused", WARN) if qs.paused else text("active" if wide else "", DIM)
    limits = " ≠ ".join(filter(None, (limits_text(qs) or "-" if qs.drift else limits_text(qs),
                                      drift_text(qs))))
    return build(COLUMNS, wide, name, {
        "queue": (literal(name, limit=40), name),
        "state": (state, qs.paused),
        "pending": (number(qs.pending), qs.pending),
        "held": (number(qs.held, WARN if qs.held else DIM), qs.held),
        "running": (running_cell(qs), qs.running),
        "dead": (number(qs.dead, BAD if qs.dead else ""), qs.dead),
        "lag": (Timed(lambda now: fixed(age(None if oldest is None else now - oldest))),
                float("-inf") if oldest is None else -oldest),
        "limits": (text(limits or "-", WARN if qs.drift else "" if limits else DIM), limits),
    }, queue=name)


VIEW = Queues()
