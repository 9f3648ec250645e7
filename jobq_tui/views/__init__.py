"""The monitor's views: the shared view model (``jobq_core.presentation.views``: what each
view reads, its columns, its rows, the keys that act on them), and what the monitor says
of a view key (the number key that shows a view, where a key acts), worked out from the
views, never written down per view.
"""
from __future__ import annotations

from jobq_core.presentation.views import (
    ROW_LIMIT, VIEW_KEYS, VIEWS, Column, Row, View, ViewKey, sort_rows,
)


def tab_key(view: View) -> str:
    """The number key that shows ``view``."""
    return str(list(VIEWS.values()).index(view) + 1)


def offering(key: ViewKey) -> list[View]:
    """The views ``key`` acts in, in tab order."""
    return [v for v in VIEWS.values() if key in v.keys]


def where(key: ViewKey) -> str:
    """``the Workers view (3)``; ``Dead (5) or All (6)``."""
    views = offering(key)
    if len(views) == 1:
        return f"the {views[0].title} view ({tab_key(views[0])})"
    names = [f"{v.title} ({tab_key(v)})" for v in views]
    return ", ".join(names[:-1]) + " or " + names[-1]


def hint(key: str) -> str:
    """What a view key says when pressed in a view where none of its actions acts."""
    first = next(k for k in VIEW_KEYS if k.key == key)
    return f"{key} {first.does}: open {where(first)}"


__all__ = ["ROW_LIMIT", "VIEWS", "VIEW_KEYS", "Column", "Row", "View", "ViewKey", "hint",
           "offering", "sort_rows", "tab_key", "where"]
