"""The view model every front end shows: the monitor (``jobq_tui``) and the web dashboard
(``jobq_web``) read the same views, so the two can never disagree.

One module per view (what it reads, its columns, its rows, the keys that act on them; see
``base.View``), the filter language (``filters``), what one read holds (``snapshot``), the
WHY column (``why``) and the cells rows are made of (``cells``: plain data, each front end
draws them its own way). ``VIEWS`` is their registry in tab order. Nothing here imports a
user interface toolkit, reads the database itself or calls the API: a view is handed what
it reads through (``base.Reader``, a ``Queue``).
"""
from __future__ import annotations

from . import all_jobs, dead, queues, retries, running, schedules, workers
from .base import Column, Reader, Row, View, sort_rows
from .snapshot import ROW_LIMIT
from .keys import ALL as ALL_KEYS
from .keys import ViewKey

VIEWS: dict[str, View] = {v.name: v for v in (
    running.VIEW, queues.VIEW, workers.VIEW, retries.VIEW, dead.VIEW, all_jobs.VIEW,
    schedules.VIEW)}

# The view keys some view offers, in the help screen's order.
VIEW_KEYS: tuple[ViewKey, ...] = tuple(
    k for k in ALL_KEYS if any(k in v.keys for v in VIEWS.values()))

__all__ = ["ALL_KEYS", "ROW_LIMIT", "VIEWS", "VIEW_KEYS", "Column", "Reader", "Row", "View",
           "ViewKey", "sort_rows"]
