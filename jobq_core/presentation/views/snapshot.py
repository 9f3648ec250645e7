"""What one poll read: ``Snapshot``, the record the views build their rows from.

No Textual and no views here: ``Source`` makes snapshots, the views read them and the app
keeps the last one, and none of them needs to import the others to share it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...types import Hold, Job, Stats, Throughput, WorkerInfo

from .filters import Filter

ROW_LIMIT = 200  # rows read per list: more than any terminal shows, few enough to be cheap


@dataclass(frozen=True)
class Snapshot:
    """Everything one screen shows, read in one poll. Lists hold at most ``ROW_LIMIT``."""

    view: str  # the name of the view whose rows these are (``View.name``)
    filter: Filter
    grouped: bool
    version: int
    read_at: float  # clock time of the read these rows come from
    checked_at: float  # last time the database was seen unchanged since read_at
    read_seconds: float  # wall time of the read (monotonic)
    read_cpu: float  # CPU time of the read (its thread's): what a refresh costs this process
    stats: Stats
    history: Throughput  # one-second buckets, the last SPARK_SPAN seconds (rates, sparklines)
    workers: tuple[WorkerInfo, ...]
    running: tuple[Job, ...]
    rows: tuple[Any, ...] = field(default=())  # the view's own rows (``View.read``)
    rows_at: float = 0.0  # clock time ``rows`` were read (earlier than read_at if kept)
    # what other jobs' rows say holds the rows' jobs back (``View.read_holds``), by job id
    holds: Mapping[int, Hold] = field(default_factory=dict)
    reused: bool = False  # True: the database had not changed; these are the last rows
    frozen: bool = False  # True: a frozen copy (its directory is not writable): no live updates
    blockers: tuple[str, ...] = ()  # stopped processes holding the write lock
    leader: str | None = None  # the worker leading maintenance, its lease holding
    db_warnings: tuple[str, ...] = ()  # jobq's tables: ``DbHealth.warnings``, read now and then


__all__ = ["ROW_LIMIT", "Snapshot"]
