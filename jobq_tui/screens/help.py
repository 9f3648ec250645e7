"""The ``?`` screen: every key, and how states read without colour."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

HELP = """\
jobq-tui: every key                 j k PgUp PgDn g G scroll · esc q ? close
 1-7        views: Running Queues Workers Retries Dead All Schedules
 j k ↑ ↓    move   PgUp PgDn  a page   g G  top, bottom   h l ← →  sideways
 enter      job detail, live (on a dead group: its jobs)
 esc        back; unmark; clear the filter        ?  q  this help / quit
 /          filter as you type: words (searched in the database), queue:Q
            and kind:K (name prefixes), worker:W, error:"text", status:S
            #123 (or id:123) opens job 123
 s S        sort by the next column (▲; past the last: as read) / reverse
 d          Dead: grouped by error, or one row per job
 p r        pause (times freeze at the data's own time) / refresh now
 space      mark jobs: R and K then act on every marked one
 R          retry the dead job or group; in Running: take the job back
 A          retry every dead job the filter selects
 K          cancel the job          X  Workers: forget the lost workers
 P          Queues: pause or resume the selected queue, for every worker

Actions ask first, and are hidden with --read-only.
Without colour: ! expiring ✗ expired/lost/dead ◐ late ⊘ cancel ⏸ paused
Database text is shown literally: controls appear as ␛ ␇ ␀ ⟨U+202E⟩.
"""


class HelpScreen(ModalScreen[None]):
    """Fits 80x24; on a smaller screen it scrolls with the keys of every list."""

    BINDINGS = [
        Binding("escape,q,question_mark", "app.pop_screen", "close"),
        Binding("j,down", "scroll(1)", show=False),
        Binding("k,up", "scroll(-1)", show=False),
        Binding("pagedown", "scroll(10)", show=False),
        Binding("pageup", "scroll(-10)", show=False),
        Binding("g,home", "scroll(-100000)", show=False),
        Binding("G,end", "scroll(100000)", show=False),
    ]

    def action_scroll(self, lines: int) -> None:
        scroll = self.query_one("#help", VerticalScroll)
        scroll.scroll_relative(y=lines, animate=False)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Text(HELP))
