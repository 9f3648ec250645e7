"""The monitor's header: where, how fresh, how many, how fast, and what is wrong.

Built as ``Text`` from numbers and our own words; the only outside string (the path the
operator typed) goes through ``literal``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from jobq_core import WorkerState
from jobq_core.presentation.display import duration, masked_url

from ..pacer import stale_after
from jobq_core.presentation.views.snapshot import Snapshot
from ..source import rates, spark_buckets
from ..views.cells import BAD, DIM, OK, WARN, age, literal

_BLOCKS = " ▁▂▃▄▅▆▇█"


def sparkline(values: tuple[int, ...] | list[int], width: int) -> str:
    """The last ``width`` values as block characters, scaled to the largest; 0 is blank."""
    vals = list(values)[-width:]
    top = max(vals, default=0)
    if top <= 0:
        return "▁" * len(vals)
    return "".join(_BLOCKS[0 if v <= 0 else max(1, round(v / top * 8))] for v in vals)


@dataclass(frozen=True)
class HeaderState:
    path: str
    live: bool
    interval: float
    read_only: bool
    beat: float


def header_text(snap: Snapshot | None, now: float, st: HeaderState, wide: bool,
                at: float | None = None) -> Text:
    """``now`` is the clock; ``at`` the time the data is judged at, when it differs (the
    data's own time, while paused or stale: countdowns and warnings are frozen there)."""
    frozen, at = at is not None, now if at is None else at
    t = Text(no_wrap=True, overflow="ellipsis")
    if wide:
        t.append("jobq", "bold")
        t.append(" · ")
    path = masked_url(st.path)
    t.append_text(literal(path if wide else os.path.basename(path) or path,
                          limit=60 if wide else 24))
    t.append(" · ")
    if st.live:
        t.append(f"● live {st.interval:g}s", OK)
    else:
        t.append("⏸ PAUSED", WARN)
    if st.read_only:
        t.append(" · read-only", DIM)
    if snap is None:
        t.append(" · reading…", DIM)
        return t
    if snap.frozen:  # a WAL database whose directory we cannot write: no live view of it
        t.append(" · ◼ frozen copy (directory not writable)", WARN)
    stale = max(0.0, now - snap.checked_at)
    t.append(f" · {'updated ' if wide else ''}{age(stale)} ago",
             WARN if stale > stale_after(st.interval) else "")
    if frozen:
        t.append(" · frozen", WARN)  # countdowns stopped at the data's time
    for warning in _warnings(snap, at, st.beat):
        t.append("  ")
        warning.stylize(BAD)
        t.append_text(warning)
    t.append("\n")
    s = snap.stats
    slots = sum(w.concurrency for w in snap.workers
                if w.state(at, st.beat) != WorkerState.LOST)
    lag = None if s.oldest_pending_at is None else max(0.0, at - s.oldest_pending_at)
    for label, value, style in (
        ("pending", s.pending, ""),  # all pending; retry and sched are parts of it
        ("running", f"{s.running}/{slots}" if slots else s.running, ""),
        ("retry", s.retrying, WARN if s.retrying else ""),
        ("sched", s.scheduled, ""),
        *((("wait", s.waiting, ""),) if s.waiting else ()),  # after others: only when some
        ("dead", s.dead, BAD if s.dead else ""),
    ):
        t.append(f"{label} ", DIM)
        t.append(f"{value}", style)
        t.append("  ")
    t.append("lag ", DIM)
    t.append(age(lag), WARN if lag and lag > 60 else "")
    paused = [name for name, qs in s.queues.items() if qs.paused]
    if paused:  # an operator's choice, not a fault: marked, not alarmed
        t.append("  ")
        if len(paused) == 1:
            t.append("⏸ ", WARN)
            t.append_text(literal(paused[0], WARN, limit=20))
            t.append(" paused", WARN)
        else:
            t.append(f"⏸ {len(paused)} queues paused", WARN)
    if wide:
        t.append("   last hour: ", DIM)
        t.append(f"✓ {s.succeeded_recent} ok  ✗ {s.dead_recent} dead  "
                 f"⊘ {s.cancelled_recent} cancelled")
    t.append("\n")
    # The headline rates (the last two seconds and the one under way) and the sparklines'
    # buckets (the last ends with this second), at the time the data is complete up to.
    complete = min(at, snap.checked_at)
    done, fail = rates(snap.history, complete)
    tp = spark_buckets(snap.history, complete)
    width = 29 if wide else 20
    t.append(f"{_rate(done)}/s ok ", OK)
    t.append(sparkline(tp.succeeded, width))
    t.append(f"   {_rate(fail)}/s fail ", BAD if fail else DIM)
    t.append(sparkline(tp.failed, width))
    span = int(tp.bucket * min(width, len(tp.succeeded)))
    t.append(f"   ({duration(span)})", DIM)
    return t


def _rate(per_second: float) -> str:
    return f"{per_second:.1f}" if per_second < 100 else f"{per_second:.0f}"


def _warnings(snap: Snapshot, now: float, beat: float) -> list[Text]:
    """What is wrong, judged at ``now`` (the data's time while frozen)."""
    return [w if isinstance(w, Text) else Text(w) for w in _problems(snap, now, beat)]


def _problems(snap: Snapshot, now: float, beat: float) -> list[str | Text]:
    """Most severe first (the line is cut at the screen's edge, so the first stays whole):
    ready jobs nobody will run, then jobs whose lease ran out, then workers gone silent,
    then jobq's tables (vacuum held back, dead rows past the bound, a starved WAL)."""
    out: list[str | Text] = []
    live = [w for w in snap.workers if w.state(now, beat) != WorkerState.LOST]
    # Jobs are ready and nobody will run them: the silent failure.
    # (A paused queue's jobs wait on purpose: no alarm for them.)
    ready = [name for name, qs in snap.stats.queues.items()
             if qs.oldest_pending_at is not None and qs.oldest_pending_at <= now
             and not qs.paused]
    if ready and not live:
        out.append("! no live worker")
    elif ready:
        served = set().union(*(w.queues or () for w in live))
        if not any(w.queues is None for w in live):
            orphans = [q for q in ready if q not in served]
            if orphans:
                out.append(Text("! no live worker for ") + literal(orphans[0], limit=20)
                           if len(orphans) == 1 else
                           f"! no live worker for {len(orphans)} queues")
    expired = sum(1 for j in snap.running if j.lease_until is not None and j.lease_until < now)
    if expired:
        out.append(f"! {expired} expired lease{'s' if expired > 1 else ''}")
    lost = len(snap.workers) - len(live)
    if lost:
        out.append(f"! {lost} lost worker{'s' if lost > 1 else ''}")
    out.extend(f"! {warning}" for warning in snap.db_warnings)
    return out


class TextLine(Widget):
    """Fixed-height text drawn line by line; a line is redrawn only when it changed.

    ``Static.update`` asks for a new layout of the whole screen each time (its size might
    change), and Textual's own drawing of a ``Text`` goes through a pipeline that cost
    3.6 ms for the three header lines (``bench/tui_cpu.py``), every second during a drain.
    Here each line is one cached ``Strip`` of the line's segments over the widget's style,
    rebuilt when that line's text or the width changed. Its height comes from the
    stylesheet; text past the width is cut with an ellipsis.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._text = Text()
        self._lines: list[Text] = []
        self._sigs: list[tuple] = []
        self._strips: dict[int, Strip] = {}
        self._base: Style | None = None  # self.rich_style: it walks the ancestors each time

    def show(self, text: Text) -> None:
        lines = list(text.split("\n", allow_blank=True)) if text.plain else []
        sigs = [(line.plain, tuple(line.spans), str(line.style)) for line in lines]
        if sigs == self._sigs:
            return
        width = self.size.width
        for y in range(max(len(sigs), len(self._sigs))):
            if y >= len(sigs) or y >= len(self._sigs) or sigs[y] != self._sigs[y]:
                self._strips.pop(y, None)
                self.refresh(Region(0, y, width, 1))
        self._text, self._lines, self._sigs = text, lines, sigs

    def render(self) -> Text:
        return self._text  # what it shows, as text (not how it is drawn: ``render_line``)

    def render_line(self, y: int) -> Strip:
        strip = self._strips.get(y)
        if strip is None:
            base = self._base
            if base is None:
                base = self._base = self.rich_style
            width = self.size.width
            if y < len(self._lines):
                line = self._lines[y].copy()
                line.end = ""
                line.truncate(width, overflow="ellipsis", pad=True)
                segments = [seg for seg in line.render(self.app.console) if seg.text != "\n"]
                strip = Strip(Segment.apply_style(segments, base)).adjust_cell_length(width, base)
            else:
                strip = Strip.blank(width, base)
            self._strips[y] = strip
        return strip

    def on_resize(self) -> None:
        self._strips.clear()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._base = None
        self._strips.clear()


class StatusHeader(TextLine):
    """Three lines of status, rebuilt every tick from the last snapshot and the clock.
    (Not Textual's ``Header``, the title bar, which this app does not use.)"""

    def show_state(self, snap: Snapshot | None, now: float, st: HeaderState,
                   wide: bool, at: float | None = None) -> None:
        self.show(header_text(snap, now, st, wide, at))
