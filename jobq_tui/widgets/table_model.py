"""The rows a ``JobTable`` shows and what changed between two sets of them: pure data, no
Textual (tested without an app), so the table widget only draws.

Invariants:

* Rows are keyed (``Row.key``); ``set_rows`` takes the whole list in display order and
  reports, by index, only the rows whose look changed, each with its old and new
  signature (one part per cell), so the table redraws the cells that changed and nothing
  else.
* A cell that moves with the clock is ``Timed``: it is worked out at the model's time
  (``now``) when a row is shown (``freshen``), so a tick costs the rows in view, however
  many rows were read. A row object handed in again at the same time is not looked at.
* A signature part is kept, not computed again, for a cell that is the same ``Text``
  object as before: rows are made of the shared view model's cells, which stay the same
  while their record does, a ``Timed`` cell gives the same cell for the same time, and an
  equal cell is drawn as the same ``Text`` (``views.cells.rich_cell``).
* ``natural`` widths are what the cells would take (at least each column's label); the
  widget fits them to the screen.
* Marks (row keys) go when their row leaves.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from rich.text import Text

from jobq_core.presentation.views.base import Column, Row
from ..views.cells import Timed, rich_cells

Signature = tuple  # one (plain, style, spans, cell length) per cell: what decides its look


class ColumnChange(Enum):
    SAME = "same"
    LABELS = "labels"  # the same columns, a label changed (a sort mark): rows kept
    NEW = "new"  # other columns: every row dropped


@dataclass(frozen=True, slots=True)
class Change:
    """Row ``index`` (``key``) now looks like ``new``; ``old`` is None for a new row."""

    index: int
    key: str
    old: Signature | None
    new: Signature


@dataclass(frozen=True)
class RowsChange:
    """What a ``set_rows`` or ``tick`` changed: the rows that look different, whether the
    natural widths moved (every line is drawn again then) and whether the order did."""

    changed: list[Change]
    widths: bool
    order: bool = False


class RowModel:
    def __init__(self) -> None:
        self.columns: list[Column] = []
        self.natural: list[int] = []  # what the cells would take
        self.rows: list[Row] = []
        self.index: dict[str, int] = {}
        self.by_key: dict[str, Row] = {}
        self.now = 0.0  # the time ``Timed`` cells are shown at
        self.marked: set[str] = set()  # row keys
        self._cells: dict[str, tuple[Text, ...]] = {}  # row key -> its cells at _cells_at
        self._cells_at: dict[str, float] = {}
        self._timed: dict[str, tuple[Row, bool]] = {}  # row key -> (row, has Timed cells)
        self._sigs: dict[str, Signature] = {}

    def set_columns(self, cols: list[Column]) -> ColumnChange:
        if [(c.key, c.label) for c in cols] == [(c.key, c.label) for c in self.columns]:
            return ColumnChange.SAME
        if [c.key for c in cols] == [c.key for c in self.columns]:  # a label changed
            self.columns = list(cols)
            self.natural = [max(w, len(c.label)) for w, c in zip(self.natural, cols)]
            return ColumnChange.LABELS
        self.columns = list(cols)
        self.rows, self.index, self._sigs, self.by_key = [], {}, {}, {}
        self._cells, self._cells_at, self._timed = {}, {}, {}
        self.natural = [len(c.label) for c in cols]
        return ColumnChange.NEW

    def set_rows(self, rows: list[Row], now: float) -> RowsChange:
        """Show ``rows`` in this order, their ``Timed`` cells at ``now``."""
        old_order = self.rows
        self.now = now
        widths = [len(c.label) for c in self.columns]
        n = len(widths)
        changed: list[Change] = []
        sigs: dict[str, Signature] = {}
        cells: dict[str, tuple[Text, ...]] = {}
        cells_at: dict[str, float] = {}
        known = self.by_key
        for i, row in enumerate(rows):
            key = row.key
            old = self._sigs.get(key)
            if (known.get(key) is row and old is not None
                    and (self._cells_at.get(key) == now or not self._has_timed(row))):
                sig, shown = old, self._cells[key]  # the same row as last time, same time
            else:
                shown = resolved(row, now)
                sig = signature(shown, self._cells.get(key), old)
                if old != sig:
                    changed.append(Change(i, key, old, sig))
            sigs[key], cells[key], cells_at[key] = sig, shown, now
            for j in range(min(n, len(sig))):
                if sig[j][3] > widths[j]:
                    widths[j] = sig[j][3]
        order = len(rows) != len(old_order) or any(
            a.key != b.key for a, b in zip(rows, old_order))
        self.rows = list(rows)
        self.index = {r.key: i for i, r in enumerate(rows)}
        self.by_key = {r.key: r for r in rows}
        self._timed = {k: v for k, v in self._timed.items() if k in self.index}
        self._sigs, self._cells, self._cells_at = sigs, cells, cells_at
        self.marked &= self.index.keys()
        moved = widths != self.natural
        self.natural = widths
        return RowsChange(changed, moved, order)

    def tick(self, now: float, first: int, stop: int) -> RowsChange:
        """Show the same rows at ``now``: the ``Timed`` cells of rows ``first`` to
        ``stop`` (those in view) are worked out again; the others catch up when shown
        (``cells``)."""
        self.now = now
        changed = []
        widths = list(self.natural)
        for index in range(max(0, first), min(len(self.rows), stop)):
            change = self.freshen(index)
            if change is not None:
                changed.append(change)
                for j, part in enumerate(change.new[:len(widths)]):
                    widths[j] = max(widths[j], part[3])
        moved = widths != self.natural  # a countdown grew a digit
        self.natural = widths
        return RowsChange(changed, moved)

    def freshen(self, index: int) -> Change | None:
        """Work row ``index``'s ``Timed`` cells out at the model's time if they were shown
        at another; the change when that changed how the row looks."""
        row = self.rows[index]
        key = row.key
        if self._cells_at.get(key) == self.now or (
                key in self._cells and not self._has_timed(row)):
            return None
        shown = resolved(row, self.now)
        old = self._sigs.get(key)
        sig = signature(shown, self._cells.get(key), old)
        self._cells[key], self._cells_at[key] = shown, self.now
        if sig == old:
            return None
        self._sigs[key] = sig
        return Change(index, key, old, sig)

    def cells(self, index: int) -> tuple[tuple[Text, ...], Change | None]:
        """Row ``index``'s cells at the model's time, and the change if they had to be
        worked out again (a row scrolled into view since the last tick)."""
        change = self.freshen(index)
        return self._cells[self.rows[index].key], change

    def _has_timed(self, row: Row) -> bool:
        seen = self._timed.get(row.key)
        if seen is None or seen[0] is not row:
            seen = self._timed[row.key] = (row, any(isinstance(c, Timed) for c in row.cells))
        return seen[1]

    # -- marks ----------------------------------------------------------------------------

    def toggle_mark(self, key: str) -> bool:
        """Mark or unmark a shown row; False if it is not shown."""
        if key not in self.index:
            return False
        self.marked ^= {key}
        return True

    def clear_marks(self) -> list[int]:
        """Unmark every row; the indexes of those that were marked and shown."""
        marked, self.marked = self.marked, set()
        return [self.index[k] for k in marked if k in self.index]

    def marked_rows(self) -> list[Row]:
        """The marked rows, in display order."""
        return [r for r in self.rows if r.key in self.marked]


def resolved(row: Row, now: float) -> tuple[Text, ...]:
    """The row's cells as shown at ``now``, drawn as ``Text`` (the same ``Text`` for an
    equal cell: ``rich_cell``)."""
    return rich_cells(row.cells, now)


def signature(cells: tuple[Text, ...], before: tuple[Text, ...] | None,
              old: Signature | None) -> Signature:
    """What decides how each cell looks. A cell that is the same ``Text`` as in the cells
    it replaces (``before``, whose signature is ``old``) keeps its part."""
    if before is None or old is None or len(before) != len(cells):
        return tuple(_cell_signature(c) for c in cells)
    return tuple(part if c is was else _cell_signature(c)
                 for c, was, part in zip(cells, before, old))


def _cell_signature(c: Text) -> tuple:
    return (c.plain, str(c.style), len(c.spans), c.cell_len)


__all__ = ["Change", "ColumnChange", "RowModel", "RowsChange", "resolved", "signature"]
