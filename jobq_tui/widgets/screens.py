"""Screens over the main view: job detail, help, and the confirmation for actions.

Everything shown from the database is a ``Text`` from ``safe_text`` (see its invariants);
the messages of confirmations are built by the app from numbers and safe Text only.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Footer, Static

from jobq_core.types import Attempt, Job

from ..safe_text import display_text
from ..views import BAD, DIM, fmt_dur, status_cell


def _when(t: float | None) -> str:
    if t is None:
        return "-"
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _json(value: object) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
    except (TypeError, ValueError):
        return repr(value)


def detail_text(job: Job | None, attempts: list[Attempt], now: float, job_id: int) -> Text:
    """The whole detail of one job as one scrollable Text."""
    t = Text()
    if job is None:
        t.append(f"job {job_id} no longer exists (pruned?)", BAD)
        return t
    t.append(f"job {job.id}  ", "bold")
    t.append_text(status_cell(job, now))
    t.append("\n")
    fields = [
        ("kind", job.kind), ("queue", job.queue), ("priority", job.priority),
        ("attempts", f"{job.attempts}/{job.max_attempts}"), ("worker", job.worker),
        ("created", _when(job.created_at)), ("run at", _when(job.run_at)),
        ("started", _when(job.started_at)), ("finished", _when(job.finished_at)),
        ("lease until", _when(job.lease_until)),
        ("unique key", job.unique_key),
    ]
    if job.cancel_requested:
        fields.append(("cancel", "requested; the worker stops the job at its next heartbeat"))
    for name, value in fields:
        t.append(f"{name:>12}  ", DIM)
        t.append_text(display_text("-" if value is None else value, limit=200))
        t.append("\n")
    if job.progress is not None or job.progress_message:
        t.append(f"{'progress':>12}  ", DIM)
        if job.progress is not None:
            t.append(f"{job.progress * 100:.0f}%  ")
        t.append_text(display_text(job.progress_message or "", limit=500))
        t.append("\n")
    _section(t, "payload", _json(job.payload))
    if job.result is not None:
        _section(t, "result", _json(job.result))
    t.append("\nattempts\n", "bold underline")
    if not attempts:
        t.append("  none yet\n", DIM)
    for a in attempts:
        took = "" if a.started_at is None or a.ended_at is None else \
            f" ({fmt_dur(a.ended_at - a.started_at)})"
        t.append(f"  #{a.attempt}  ", "bold")
        t.append_text(display_text(a.outcome, BAD if a.outcome in ("failed", "lease expired")
                                   else ""))
        t.append("  worker ", DIM)
        t.append_text(display_text(a.worker or "-", limit=80))
        t.append(f"  {_when(a.started_at)} → {_when(a.ended_at)}{took}\n", DIM)
        if a.error:
            t.append_text(display_text(a.error, multiline=True, limit=20000))
            t.append("\n")
    return t


def _section(t: Text, title: str, body: str) -> None:
    t.append(f"\n{title}\n", "bold underline")
    t.append_text(display_text(body, multiline=True, limit=20000))
    t.append("\n")


class DetailScreen(Screen):
    """One job: payload, result, progress and every attempt with its full error.

    Live like the main view: at each refresh interval it re-reads the job when the
    database changed, and redraws a running job (its lease countdown) when it did not.
    """

    BINDINGS = [
        Binding("escape", "app.pop_screen", "back"),
        Binding("q", "app.pop_screen", "back", show=False),
        Binding("j", "scroll('down')", "down", show=False),
        Binding("k", "scroll('up')", "up", show=False),
        Binding("r", "reload", "reload"),
        Binding("p", "app.pause", "pause"),
    ]

    def __init__(self, job_id: int):
        super().__init__()
        self.job_id = job_id
        self.version: int | None = None  # data_version of the last read
        self.job: Job | None = None
        self.attempts: list[Attempt] = []

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="detail-scroll"):
            yield Static(Text(f"loading job {self.job_id}…"), id="detail-body")
        yield Footer()

    def on_mount(self) -> None:
        self.set_interval(self.app.interval, self._live)  # type: ignore[attr-defined]

    def _live(self) -> None:
        if self.app.live:  # type: ignore[attr-defined]
            self.app.load_detail(self, force=False)  # type: ignore[attr-defined]

    def show(self, text: Text) -> None:
        self.query_one("#detail-body", Static).update(text)

    def action_scroll(self, direction: str) -> None:
        scroll = self.query_one("#detail-scroll", VerticalScroll)
        scroll.scroll_relative(y=1 if direction == "down" else -1, animate=False)

    def action_reload(self) -> None:
        self.app.load_detail(self)  # type: ignore[attr-defined]


HELP = """\
jobq-tui — live monitor of a jobq database

  1-6            views: Running Queues Workers Retries Dead All (or click a tab)
  j k ↑ ↓        move          g G   top / bottom       h l ← →  sideways
  enter          job detail, live (on a dead group: list its jobs)
  esc            back; clears the filter
  /              filter: words and queue:Q kind:K worker:W error:TEXT status:S
                 quote values with spaces: error:"connection refused"
  s / S          sort by the next column / reverse the order
  d              dead jobs: grouped by error, or one row each
  p              pause / resume live refresh       r  refresh now
  space          mark the job (R and K then act on every marked job)
  R              retry the selected dead job (a group: every job in it)
  A              retry all dead jobs matching the filter
  K              cancel the selected pending or running job
  ?              this help      q  quit

Actions ask first and are hidden with --read-only.
States read without colour: ! near expiry, ✗ expired/lost/dead, ◐ late,
⊘ cancel. Text from the database is shown literally; control characters
appear as ␛ ␇ ␀ ⟨U+202E⟩.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Text(HELP))


class ConfirmScreen(ModalScreen[bool]):
    """Asks before a destructive action; ``y``/enter confirm, ``n``/esc cancel."""

    BINDINGS = [
        Binding("y", "answer(True)", "yes"),
        Binding("n,escape", "answer(False)", "no"),
    ]

    def __init__(self, message: Text):
        super().__init__()
        self.message = message

    def compose(self) -> ComposeResult:
        with Grid(id="confirm"):
            yield Static(self.message, id="confirm-message")
            yield Button("Yes (y)", variant="error", id="yes")
            yield Button("No (n)", variant="primary", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
