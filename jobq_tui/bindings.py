"""The monitor's keys, made from what the views declare (``View.keys``): nothing here
names a view or says which view a key acts in.
"""
from __future__ import annotations

from textual.binding import Binding

from .views import VIEW_KEYS, VIEWS, tab_key

# The actions of the views' own keys: each offered only in the views that declare it.
VIEW_ACTIONS = frozenset(k.action for k in VIEW_KEYS)
# Hidden in a read-only monitor.
WRITE_ACTIONS = frozenset({k.action for k in VIEW_KEYS if k.writes} | {"mark", "elsewhere"})
# Keys of the main view: they do nothing on the detail screen.
MAIN_VIEW_ACTIONS = VIEW_ACTIONS | {"filter", "clear_filter", "pause", "refresh", "sort",
                                    "sort_reverse", "mark", "view", "elsewhere"}


def app_bindings() -> list[Binding]:
    """The app's own keys, then the views' (each view key bound once per action, then
    once more to say where it acts when no view action took it), then the number keys."""
    own = [
        Binding("question_mark", "help", "help"),
        # priority: handled as the key arrives, before the keys queued behind it are
        # forwarded to the table (over ssh "/queue:mail" comes in one burst)
        Binding("slash", "filter", "filter", priority=True),
        Binding("escape", "clear_filter", "clear", show=False),
        Binding("p", "pause", "pause"),
        Binding("r", "refresh", "refresh", show=False),
        Binding("s", "sort", "sort"),
        Binding("S", "sort_reverse", "reverse", show=False),
        Binding("space", "mark", "mark", show=False),
    ]
    # The view keys show in the footer only in the views they act in (so the footer fits
    # 80 columns); elsewhere the key says which view it acts in.
    keys = [Binding(k.key, k.action, k.label, show=k.footer) for k in VIEW_KEYS]
    elsewhere = [Binding(key, f"elsewhere('{key}')", show=False)
                 for key in dict.fromkeys(k.key for k in VIEW_KEYS)]
    views = [Binding(tab_key(v), f"view('{name}')", v.title, show=False)
             for name, v in VIEWS.items()]
    return [*own, *keys, *elsewhere, Binding("q", "quit", "quit"), *views]


__all__ = ["MAIN_VIEW_ACTIONS", "VIEW_ACTIONS", "WRITE_ACTIONS", "app_bindings"]
