"""The cells rows are made of, as Rich ``Text``; the one place database text becomes ``Text``.

Invariants (see ``jobq_core.common.textsafe`` for what ``clean`` guarantees):

* A string from the database reaches a widget only through ``literal``: cleaned of every
  control and invisible character, and a ``Text`` that is never parsed as markup, so
  ``[bold]`` or ``[@click=app.quit]`` from the database show as those characters. Never
  pass database strings to anything that parses markup (``Static("...")``,
  ``notify(markup=True)``, f-strings into markup).
* ``text`` is for words the monitor composed itself, with no database content inside.
* A state is drawn only by ``badge``: glyph and word, so it reads without colour.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

from rich.text import Text

from jobq_core import Job, WorkerState
from jobq_core.presentation.display import WORKER_BADGES, Badge, countdown, duration, tries as _tries
from jobq_core.common.error_groups import error_line
from jobq_core.common.textsafe import clean

WARN, BAD, DIM, OK = "yellow", "bold red", "dim", "green"


class Timed:
    """A cell that moves with the clock (a countdown, an age, a state judged by time):
    ``at(now)`` is its ``Text`` then. A table works it out when it draws the cell, so a
    tick costs the rows in view, not every row read (``JobTable.tick``), and the rows
    themselves stay the same objects from one second to the next. The same ``Text`` is
    returned for the same ``now`` (a table then knows the cell did not change)."""

    __slots__ = ("_make", "_now", "_text")

    def __init__(self, make: Callable[[float], Text]):
        # No ``Text`` until one is asked for: a drain's poll makes 600 of these for the
        # All view's 200 rows, and an empty ``Text()`` each was 40 % of building a row.
        self._make = make
        self._now: float | None = None
        self._text: Text | None = None

    def at(self, now: float) -> Text:
        if now != self._now or self._text is None:
            self._now, self._text = now, self._make(now)
        return self._text


Cell = Text | Timed


def literal(value: object, style: str = "", *, multiline: bool = False,
            limit: int | None = None) -> Text:
    """A ``Text`` showing ``value`` (from the database, or anyone) literally."""
    return Text(clean(value, multiline=multiline, limit=limit), style=style,
                no_wrap=not multiline, overflow="ellipsis" if not multiline else "fold")


@functools.lru_cache(maxsize=4096)
def name_cell(value: str | None, limit: int) -> Text:
    """``literal`` for a name that many rows share (a kind, a queue): the same ``Text``
    for the same arguments, made once (a drain's poll builds 200 rows whose kind and
    queue are the same few names). Not to be modified."""
    return literal(value, limit=limit)


def text(s: str, style: str = "") -> Text:
    """Words the monitor composed itself (no database content inside)."""
    return Text(s, style=style, no_wrap=True, overflow="ellipsis")


@functools.lru_cache(maxsize=4096)
def fixed(s: str, style: str = "") -> Text:
    """``text``, shared: the same ``Text`` for the same words and style. For cells many
    rows and seconds repeat (a state, ``1/3``, ``12s``, a countdown): a ``Text`` costs more
    than the rest of such a cell, a drain's poll built 1,000 of them for the All view's
    200 rows, and a table sees an unchanged cell by identity. Not to be modified."""
    return text(s, style)


def number(n: int | None, style: str = "") -> Text:
    return Text(str(n or 0), style=style, justify="right", no_wrap=True)


def badge(b: Badge) -> Text:
    return fixed(b.label, b.style)


def worker_states(workers, now: float, beat: float) -> dict[str, WorkerState]:
    """Each registered worker's state, by id: what a running job's row says of its worker."""
    return {w.id: w.state(now, beat) for w in workers}


@functools.lru_cache(maxsize=1024)
def worker_cell(name: str | None, state: WorkerState | None, limit: int) -> Text:
    """A job's worker, followed by its state when it is late or lost (``w3 ✗ lost``): the
    name is cut to make room, never the state. The same ``Text`` for the same arguments
    (a table then knows the cell did not change without comparing it): not to be
    modified."""
    if state in (None, WorkerState.OK):
        return literal(name, limit=limit)
    b = WORKER_BADGES[state]
    cell = literal(name, limit=max(4, limit - len(b.label) - 1))
    cell.append(" ")
    cell.append(b.label, b.style)
    return cell


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


def tries(job: Job) -> Text:
    return fixed(_tries(job))


def error_cell(job: Job) -> tuple[Text, str]:
    """The line of the job's last error that says what went wrong, and its sort value."""
    line = error_line(job.error)
    return literal(line, limit=120), line


def lease_cell(job: Job, now: float) -> Text:
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


def progress_cell(job: Job) -> Text:
    if job.cancel_requested:
        return text("⊘ cancel requested", "magenta")
    if job.progress is None and not job.progress_message:
        return text("")
    pct = "" if job.progress is None else f"{job.progress * 100:3.0f}% "
    cell = text(pct)
    cell.append_text(literal(job.progress_message or "", limit=60))
    return cell

