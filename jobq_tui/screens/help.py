"""The ``?`` screen: every key, and how states read without colour."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

HELP = """\
jobq-tui — live monitor of a jobq database

  1-7            views: Running Queues Workers Retries Dead All Schedules
  j k ↑ ↓        move          g G   top / bottom       h l ← →  sideways
  enter          job detail, live (on a dead group: list its jobs)
  esc            back; clears the filter         ?  this help      q  quit
  /              filter: words, queue:Q kind:K worker:W error:TEXT status:S
                 quote values with spaces: error:"connection refused"
  s / S          sort by the next column / reverse the order
  d              dead jobs: grouped by error, or one row each
  p              pause / resume live refresh       r  refresh now
  space          mark the job (R and K then act on every marked job)
  R              retry the selected dead job or group; Running: take back
  A              retry all dead jobs matching the filter
  K              cancel the selected pending or running job
  P              Queues: pause or resume the selected queue (all workers)

Actions ask first and are hidden with --read-only.
States read without colour: ! near expiry, ✗ expired/lost/dead, ◐ late,
⊘ cancel, ⏸ paused, 3/3 limit. Text from the database is shown literally;
control characters appear as ␛ ␇ ␀ ⟨U+202E⟩.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Text(HELP))
