"""The ``?`` screen: every key, and how states read without colour."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..views import VIEW_KEYS, VIEWS, offering

_KEYS = """\
 j k ↑ ↓    move   PgUp PgDn  a page   g G  top, bottom   h l ← →  sideways
 enter      job detail, live (on a dead group: its jobs)
 esc        back; unmark; clear the filter        ?  q  this help / quit
 /          filter as you type: words (searched in the database), queue:Q
            and kind:K (name prefixes), worker:W, error:"text", status:S
            #123 (or id:123) opens job 123
 s S        sort by the next column (▲; past the last: as read) / reverse
 p r        pause (times freeze at the data's own time) / refresh now
 space      mark jobs: R and K then act on every marked one
"""
_FOOT = """
Actions ask first, and are hidden with --read-only.
Without colour: ! expiring ✗ expired/lost/dead ◐ late ⊘ cancel ⏸ paused
Database text is shown literally: controls appear as ␛ ␇ ␀ ⟨U+202E⟩.
"""


def help_text() -> str:
    """Every key. The views' own keys (``View.keys``) and the number keys come from the
    views: which views a key acts in is never written here."""
    lines = ["jobq-tui: every key                 j k PgUp PgDn g G scroll · esc q ? close",
             f" 1-{len(VIEWS):<8} views: " + " ".join(v.title for v in VIEWS.values())]
    lines += _KEYS.splitlines()
    by_key: dict[str, list[str]] = {}
    for k in VIEW_KEYS:
        views = ", ".join(v.title for v in offering(k))
        by_key.setdefault(k.key, []).append(f"{views}: {k.help}")
    lines += [f" {key:<10} {' · '.join(parts)}" for key, parts in by_key.items()]
    return "\n".join(lines) + "\n" + _FOOT.rstrip("\n")  # no blank line at the end


HELP = help_text()


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
