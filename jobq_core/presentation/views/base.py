"""What a view is: the contract between a view module, what reads its snapshots (the
monitor's ``Source``, the web dashboard's pages) and the front ends that draw its rows.

A view says three things, and nothing outside its module branches on its name:

* what it reads: ``read(queue, filter, grouped)``, run by ``Source`` in the poll thread on
  the read-only connection. It returns the records of its rows (jobs, error groups), at
  most ``ROW_LIMIT``, narrowed by the filter's database terms where the store can. A view
  whose rows come from what every snapshot has anyway (stats, workers, running jobs) reads
  nothing (``own_rows = False``), and any snapshot serves it. After each ``read``,
  ``read_holds(queue, rows)`` may add what holds its jobs back that only other jobs' rows
  tell, for the WHY column (``views/why.py``): one batched ``Queue.holds``, never a read
  per row;
* its columns: ``columns(grouped, wide)``, and the keys that act on its rows (``keys``,
  from ``views.keys``): the app offers those keys in this view only;
* its rows: ``rows(snapshot, wide=, beat=)``, a pure function of the snapshot. Cells that
  move with the clock (countdowns, ages, states judged by time) are ``Timed``: the table
  works them out at the time it shows, once a second for the rows in view, without
  reading the database or building rows again. The filter's free words are applied here.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ...types import ErrorGroup, Hold
from .cells import Shown
from .filters import Filter, search_window
from .keys import CANCEL, FORGET, GROUP, PAUSE_QUEUE, RETRY, TAKE_BACK, ViewKey
from .snapshot import ROW_LIMIT

if TYPE_CHECKING:
    from .snapshot import Snapshot


class Reader(Protocol):
    """What a view reads through: ``Queue``'s reads (presentation never imports the API;
    it is handed a queue)."""

    def list(self, *args: Any, **kwargs: Any) -> Any: ...
    def dead_groups(self, *args: Any, **kwargs: Any) -> Any: ...
    def holds(self, *args: Any, **kwargs: Any) -> Any: ...
    def schedules(self, *args: Any, **kwargs: Any) -> Any: ...
    def stats(self, *args: Any, **kwargs: Any) -> Any: ...
    def workers(self, *args: Any, **kwargs: Any) -> Any: ...
    def leader(self) -> Any: ...
    @property
    def frozen(self) -> bool: ...


@dataclass(frozen=True)
class Column:
    """A column, and what its text may lose when the table is too wide for the screen:
    columns with a ``shrink`` order are cut, the lowest first, down to ``want`` and then,
    all of them there, to ``least`` (``display.cut_widths``); the others (ids, states,
    counts, times) are never cut. ``middle``: cut in the middle (errors keep their type
    and their telling end; a worker keeps its ``✗ lost``)."""

    key: str
    label: str
    wide_only: bool = False  # hidden below the wide layout
    shrink: int | None = None  # None: never cut
    least: int = 6
    want: int = 0
    middle: bool = False


@dataclass(frozen=True)
class Row:
    key: str  # stable across refreshes: the table keeps the cursor and marks by it
    cells: tuple[Shown, ...]
    sort: tuple[Any, ...]  # one sort value per cell
    job_id: int | None = None
    group: ErrorGroup | None = None
    queue: str | None = None  # a queue's row (the Queues view): what ``P`` pauses


class View:
    name: str
    title: str
    own_rows = True
    keys: tuple[ViewKey, ...] = ()  # the keys that act here (``views.keys``)
    side = False  # also shown in the side column of the rich layout
    regroup_every = 0.0  # seconds: grouped rows are read again at most this often

    def offers(self, action: str) -> bool:
        """Whether the view-bound action ``action`` (``ViewKey.action``) acts here."""
        return any(k.action == action for k in self.keys)

    @property
    def groups(self) -> bool:
        """``d`` switches between rows grouped by error and one row per job."""
        return GROUP in self.keys

    @property
    def retries(self) -> bool:
        """``R`` retries the selected row's job (or group); ``A`` every dead one."""
        return RETRY in self.keys

    @property
    def takes_back(self) -> bool:
        """``R`` takes the selected running job back (``retry --force``)."""
        return TAKE_BACK in self.keys

    @property
    def cancels(self) -> bool:
        return CANCEL in self.keys

    @property
    def forgets(self) -> bool:
        return FORGET in self.keys

    @property
    def pauses(self) -> bool:
        return PAUSE_QUEUE in self.keys

    def read(self, q: Reader, filt: Filter, grouped: bool) -> tuple[Any, ...]:
        return ()

    def searched(self, filt: Filter) -> int | None:
        """How many of the newest jobs ``read`` searched with ``filt`` (None: every one),
        for a front end to say so beside the rows."""
        return None

    def read_holds(self, q: Reader, rows: tuple[Any, ...]) -> Mapping[int, Hold]:
        """What other jobs' rows say holds these rows' jobs back, by job id (the
        snapshot's ``holds``); nothing for a view that does not show it."""
        return {}

    def all_columns(self, grouped: bool) -> Sequence[Column]:
        raise NotImplementedError

    def columns(self, grouped: bool, wide: bool) -> list[Column]:
        return [c for c in self.all_columns(grouped) if wide or not c.wide_only]

    def rows(self, snap: Snapshot, *, wide: bool, beat: float) -> list[Row]:
        raise NotImplementedError

    def snapshot_for(self, snap: Snapshot | None, grouped: bool) -> Snapshot | None:
        """``snap`` if it holds this view's rows as shown (``grouped`` or not); any
        snapshot for a view without rows of its own (stats, workers and running jobs are
        in every one)."""
        if snap is None or not self.own_rows:
            return snap
        if snap.view != self.name or (self.groups and snap.grouped != grouped):
            return None
        return snap

    def layout(self, grouped: bool) -> tuple[str, bool]:
        """Which set of columns shows: the app remembers a sort order for each."""
        return self.name, grouped and self.groups

    def __repr__(self) -> str:
        return f"<view {self.name}>"


class RowCache:
    """Rows built at the last call, by row key and width, reused while what they were
    built from reads the same (``==``: a re-read returns equal records for jobs that did
    not change). Rows do not depend on the time (what moves with the clock is a
    ``Timed`` cell), so from one second to the next, and across re-reads that change
    nothing, a view hands the table the same row objects, which it skips. Entries for
    records no longer shown are dropped each time (``done``). Measured in
    ``bench/tui_cpu.py``."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, bool], tuple[object, Row]] = {}
        self._next: dict[tuple[str, bool], tuple[object, Row]] = {}

    def row(self, key: str, source: object, wide: bool, build: Callable[[], Row]) -> Row:
        """The row for ``source`` (its record, and anything else it shows, in a tuple):
        the last one if ``source`` reads the same, else ``build()``."""
        hit = self._rows.get((key, wide))
        if hit is not None and (hit[0] is source or hit[0] == source):
            row = hit[1]
        else:
            row = build()
        self._next[(key, wide)] = (source, row)
        return row

    def done(self, wide: bool) -> None:
        """The rows of one call are all built: forget the others of this width."""
        kept = {k: v for k, v in self._rows.items() if k[1] != wide}
        kept.update(self._next)
        self._rows, self._next = kept, {}


def narrow(filt: Filter, status: str | None) -> dict[str, Any]:
    """``Queue.list`` arguments for the filter's database terms (its free words too: a
    search reaches beyond the rows already read, as far as ``search_window`` says) when
    it lists jobs of ``status``."""
    return dict(queue=filt.queue, kind=filt.kind, worker=filt.worker,
                error_contains=filt.error, limit=ROW_LIMIT, payloads=False,
                prefix=filt.prefix, search=filt.words, key=filt.key,
                newest=search_window(filt, status))


def build(columns: Sequence[Column], wide: bool, key: str,
          values: dict[str, tuple[Shown, Any]], **extra: Any) -> Row:
    """A row of the columns shown at this width, from ``{column key: (cell, sort value)}``."""
    keys = _SHOWN.get((id(columns), wide))
    if keys is None or keys[0] is not columns:
        keys = _SHOWN[(id(columns), wide)] = (
            columns, tuple(c.key for c in columns if wide or not c.wide_only))
    shown = [values[k] for k in keys[1]]
    return Row(key, tuple(v[0] for v in shown), tuple(v[1] for v in shown), **extra)


# (id of a view's columns, wide) -> (those columns, the keys shown): ``build`` runs for
# every row that changed, every second.
_SHOWN: dict[tuple[int, bool], tuple[Sequence[Column], tuple[str, ...]]] = {}


def limit_for(wide: bool) -> int:
    """How many characters of a name (kind, queue, worker) a row carries at most; the table
    cuts them further only when the screen is too narrow for every column (``Column``)."""
    return 60


def sort_rows(rows: list[Row], column: int, reverse: bool) -> None:
    if rows and column < len(rows[0].sort):
        rows.sort(key=lambda r: _sortable(r.sort[column]), reverse=reverse)


def _sortable(value: Any) -> tuple[int, Any]:
    """One column's sort values may mix None with numbers or strings."""
    if value is None:
        return (1, "")
    if isinstance(value, str):
        return (0, value.casefold())
    return (0, value)
