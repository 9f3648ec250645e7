"""The cells rows are made of: plain data every front end draws its own way (the monitor as
Rich ``Text``, the web dashboard as escaped HTML); the one place database text becomes a
cell.

Invariants (see ``jobq_core.common.textsafe`` for what ``clean`` guarantees):

* A string from the database reaches a cell only through ``literal``: cleaned of every
  control and invisible character. A cell is text, never markup: a front end shows it as
  those characters (the monitor never parses it as Rich markup, the web escapes it).
* ``text`` is for words jobq composed itself, with no database content inside.
* A state is drawn only by ``badge``: glyph and word, so it reads without colour.
* ``style`` is a Rich style name (``display.Badge``'s convention): data to whoever renders
  it. The few used here are the constants below.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ...common.error_groups import error_line
from ...common.textsafe import clean
from ...types import Job, WorkerState
from ..display import WORKER_BADGES, Badge, countdown, duration
from ..display import tries as _tries

WARN, BAD, DIM, OK, NOTE = "yellow", "bold red", "dim", "green", "magenta"
STYLES = (WARN, BAD, DIM, OK, NOTE, "cyan")  # every style a cell may carry


@dataclass(frozen=True, slots=True)
class Cell:
    """One cell: its text in ``style``, then ``more`` parts each in its own style (a
    worker's name, then ``✗ lost`` in red). ``right``: aligned right (ids, counts).
    Immutable and compared by value, so a front end may cache what it draws per cell."""

    text: str
    style: str = ""
    right: bool = False
    more: tuple[tuple[str, str], ...] = ()

    @property
    def plain(self) -> str:
        """The cell's whole text."""
        if not self.more:
            return self.text
        return self.text + "".join(t for t, _ in self.more)

    def parts(self) -> Iterable[tuple[str, str]]:
        """(text, style) of each part, in order."""
        yield self.text, self.style
        yield from self.more


class Timed:
    """A cell that moves with the clock (a countdown, an age, a state judged by time):
    ``at(now)`` is its ``Cell`` then. A front end works it out when it shows the cell
    (the monitor once a second, for the rows in view), so the rows themselves stay the
    same objects from one second to the next. The same ``Cell`` object is returned for the
    same ``now``."""

    __slots__ = ("_make", "_now", "_cell")

    def __init__(self, make: Callable[[float], Cell]):
        self._make = make
        self._now: float | None = None
        self._cell: Cell | None = None

    def at(self, now: float) -> Cell:
        if now != self._now or self._cell is None:
            self._now, self._cell = now, self._make(now)
        return self._cell


Shown = Cell | Timed  # what a row holds


def shown_at(cell: Shown, now: float) -> Cell:
    """``cell`` as shown at ``now``."""
    return cell.at(now) if isinstance(cell, Timed) else cell


def literal(value: object, style: str = "", *, limit: int | None = None) -> Cell:
    """A cell showing ``value`` (from the database, or anyone) literally."""
    return Cell(clean(value, limit=limit), style)


@functools.lru_cache(maxsize=4096)
def name_cell(value: str | None, limit: int) -> Cell:
    """``literal`` for a name that many rows share (a kind, a queue): made once (a drain's
    poll builds 200 rows whose kind and queue are the same few names)."""
    return literal(value, limit=limit)


@functools.lru_cache(maxsize=4096)
def fixed(s: str, style: str = "") -> Cell:
    """Words jobq composed itself (no database content inside), shared: the same cell for
    the same words and style (a state, ``1/3``, ``12s``, a countdown: cells many rows and
    seconds repeat)."""
    return Cell(s, style)


text = fixed


def number(n: int | None, style: str = "") -> Cell:
    return Cell(str(n or 0), style, right=True)


def badge(b: Badge) -> Cell:
    return fixed(b.label, b.style)


@functools.lru_cache(maxsize=1024)
def worker_cell(name: str | None, state: WorkerState | None, limit: int) -> Cell:
    """A job's worker, followed by its state when it is late or lost (``w3 ✗ lost``): the
    name is cut to make room, never the state."""
    if state in (None, WorkerState.OK):
        return literal(name, limit=limit)
    b = WORKER_BADGES[state]
    cut = clean(name, limit=max(4, limit - len(b.label) - 1))
    return Cell(cut, "", False, ((" ", ""), (b.label, b.style)))


def age(seconds: float | None) -> str:
    """How long ago, as the tables show it: whole seconds under a minute (``42s``), then
    whole minutes (``12m``), then ``duration``'s hours (``3h12m``). A cell then changes
    once a second only while it is under a minute old, and once a minute after: on an
    idle screen of older jobs nothing is redrawn (``bench/tui_cpu.py``)."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    return duration(s)


def tries(job: Job) -> Cell:
    return fixed(_tries(job))


def error_cell(job: Job) -> tuple[Cell, str]:
    """The line of the job's last error that says what went wrong, and its sort value."""
    line = error_line(job.error)
    return literal(line, limit=120), line


def lease_cell(job: Job, now: float) -> Cell:
    """Countdown to lease expiry: ``! 0:03`` near expiry, ``✗ EXPIRED 0:42 ago`` after."""
    if job.lease_until is None:
        return fixed("-", DIM)
    remaining = job.lease_until - now
    if remaining <= 0:
        return fixed(f"✗ EXPIRED {countdown(-remaining)} ago", BAD)
    term = job.lease_until - (job.heartbeat_at or job.started_at or job.lease_until)
    # A worker extends every third of the term: under a third left means beats were missed.
    if remaining < max(3.0, term / 3):
        return fixed(f"! {countdown(remaining)}", WARN)
    return fixed(f"  {countdown(remaining)}")


def progress_cell(job: Job) -> Cell:
    if job.cancel_requested:
        return fixed("⊘ cancel requested", NOTE)
    if job.progress is None and not job.progress_message:
        return fixed("")
    pct = "" if job.progress is None else f"{job.progress * 100:3.0f}% "
    return Cell(pct, "", False, ((clean(job.progress_message or "", limit=60), ""),))
