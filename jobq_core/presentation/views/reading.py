"""One read of what a view shows, for a front end that reads on demand (the web dashboard:
a page, an API call), and the dead jobs of one error group. The monitor's ``Source``
reads the same parts with its own pacing (it re-reads the hour's counts and the
sparklines' seconds less often); the views build the same rows from either snapshot.

Nothing here imports the API: the queue is handed in (``Reader``), and only its reads are
called.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...common.error_groups import group_key
from ...types import Attempt, Job, Throughput, WorkerInfo
from ..display import checked
from .base import Reader, View
from .filters import Filter
from .snapshot import ROW_LIMIT, Snapshot

HOUR = 3600.0  # the window of the "last hour" counts


def take(q: Reader, view: View, filt: Filter, *, grouped: bool = True, now: float,
         version: int = 0) -> Snapshot:
    """A snapshot for ``view``: the counts (last hour's finished ones), the workers, every
    running job (at most ``ROW_LIMIT``, unfiltered: a header's expired-lease warning sees
    them all), the view's own rows (``View.read``) and what holds them back
    (``View.read_holds``). No throughput history (``Snapshot.history`` is empty)."""
    stats = q.stats(window=HOUR)
    workers = tuple(q.workers())
    running = tuple(q.list("running", limit=ROW_LIMIT, payloads=False))
    rows = view.read(q, filt, grouped)
    holds = view.read_holds(q, rows)
    return Snapshot(view.name, filt, grouped, version, now, now, 0.0, 0.0, stats,
                    Throughput(now, 1.0, (), (), ()), shown(workers), shown(running),
                    shown(rows), now, holds=holds, frozen=bool(q.frozen),
                    leader=leading(q, now))


def leading(q: Reader, now: float) -> str | None:
    """The maintenance leader's worker id while its lease holds at ``now``."""
    lead = q.leader()
    return lead.worker if lead is not None and lead.expires_at > now else None


def dead_group_ids(q: Reader, filt: Filter, page: int = 1000) -> list[int]:
    """The dead jobs of the group ``filt`` selects (``filters.group_filter``): those the
    database finds by its kind and ``match``, kept when their error folds to the group's
    key (not others whose errors start alike)."""
    ids: list[int] = []
    offset = 0
    while True:
        jobs = q.list("dead", filt.queue, filt.kind, error_contains=filt.error, limit=page,
                      offset=offset, payloads=False, prefix=filt.prefix, search=filt.words)
        ids += [j.id for j in jobs if group_key(j.error) == filt.group]
        if len(jobs) < page:
            return ids
        offset += page


def shown(records: Sequence[Any]) -> tuple[Any, ...]:
    """Records with values jobq cannot compute with (another program wrote them) made
    neutral, so one bad row never blanks a view; ``checked`` says what was replaced."""
    out: list[Any] = []
    for r in records:
        if isinstance(r, Job):
            r = checked(r)[0]
        elif isinstance(r, Attempt):
            r = checked(r)[0]
        elif isinstance(r, WorkerInfo):
            r = checked(r)[0]
        out.append(r)
    return tuple(out)
