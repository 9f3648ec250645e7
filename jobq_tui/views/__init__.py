"""The monitor's views, one module each (what it reads, its columns, its rows, the keys
that act on them; see ``base.View``), and ``VIEWS``, their registry in tab order: the
number keys pick them, 1 the first. What the app and the help screen say of a view key
(where it acts) is worked out here from the views, never written down per view.
"""
from __future__ import annotations

from . import all_jobs, dead, queues, retries, running, schedules, workers
from .base import ROW_LIMIT, Column, Row, View, sort_rows
from .keys import ALL as _ALL_KEYS
from .keys import ViewKey

VIEWS: dict[str, View] = {v.name: v for v in (
    running.VIEW, queues.VIEW, workers.VIEW, retries.VIEW, dead.VIEW, all_jobs.VIEW,
    schedules.VIEW)}

# The view keys some view offers, in the help screen's order.
VIEW_KEYS: tuple[ViewKey, ...] = tuple(
    k for k in _ALL_KEYS if any(k in v.keys for v in VIEWS.values()))


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
