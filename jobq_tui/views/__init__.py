"""The monitor's views, one module each (what it reads, its columns, its rows; see
``base.View``), and ``VIEWS``, their registry in tab order: keys 1-7 pick them."""
from __future__ import annotations

from . import all_jobs, dead, queues, retries, running, schedules, workers
from .base import ROW_LIMIT, Column, Row, View, sort_rows

VIEWS: dict[str, View] = {v.name: v for v in (
    running.VIEW, queues.VIEW, workers.VIEW, retries.VIEW, dead.VIEW, all_jobs.VIEW,
    schedules.VIEW)}

__all__ = ["ROW_LIMIT", "VIEWS", "Column", "Row", "View", "sort_rows"]
