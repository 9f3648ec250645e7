"""A DataTable that takes whole row lists and applies only the difference.

Rows are keyed; a refresh updates the cells that changed (``update_cell``), adds and
removes rows by key, and reorders only when the order changed. The cursor stays on the
same row key across refreshes, so a job does not slip from under the operator's cursor
while they read it.
"""
from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from ..views import Column, Row


def _sig(cell: Text) -> tuple[str, str]:
    return cell.plain, str(cell.style)


class JobTable(DataTable):
    BINDINGS = [
        Binding("j", "cursor_down", "down", show=False),
        Binding("k", "cursor_up", "up", show=False),
        Binding("g", "scroll_top", "top", show=False),
        Binding("G", "scroll_bottom", "bottom", show=False),
    ]

    def __init__(self, **kwargs):
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self._columns_sig: tuple[str, ...] = ()
        self._cells: dict[str, tuple[tuple[str, str], ...]] = {}
        self._order: list[str] = []
        self.rows_by_key: dict[str, Row] = {}

    def set_columns(self, cols: list[Column]) -> None:
        sig = tuple(c.key for c in cols)
        if sig == self._columns_sig:
            return
        self.clear(columns=True)
        self._cells.clear()
        self._order = []
        self.rows_by_key = {}
        for c in cols:
            self.add_column(c.label, key=c.key)
        self._columns_sig = sig

    def set_rows(self, rows: list[Row]) -> None:
        """Make the table show ``rows`` in this order, touching only what changed."""
        keep = self.current_key()
        wanted = {r.key for r in rows}
        for key in [k for k in self._order if k not in wanted]:
            self.remove_row(key)
            del self._cells[key]
        col_keys = self._columns_sig
        for row in rows:
            sig = tuple(_sig(c) for c in row.cells)
            old = self._cells.get(row.key)
            if old is None:
                self._widen(row.cells, range(len(col_keys)))
                self.add_row(*row.cells, key=row.key)
            elif old != sig:
                changed = [i for i, (a, b) in enumerate(zip(old, sig)) if a != b]
                self._widen(row.cells, changed)
                for i in changed:
                    self.update_cell(row.key, col_keys[i], row.cells[i], update_width=True)
            self._cells[row.key] = sig
        order = [r.key for r in rows]
        self.rows_by_key = {r.key: r for r in rows}
        if order != [r.key.value for r in self.ordered_rows]:
            pos = {k: i for i, k in enumerate(order)}
            by_sig = {tuple(c.plain for c in r.cells): pos[r.key] for r in rows}
            self.sort(key=lambda cells: by_sig.get(tuple(c.plain for c in cells), 0))
        self._order = order
        if keep is not None and keep in self.rows_by_key:
            index = order.index(keep)
            if index != self.cursor_row:
                self.move_cursor(row=index, animate=False, scroll=False)

    def _widen(self, cells: tuple[Text, ...], indexes) -> None:
        """Grow column widths *before* the cells land. DataTable measures new rows only
        when idle, and a frame drawn in between is cached at the old widths (the cache
        key has no width), which leaves columns squeezed until the next change."""
        for i in indexes:
            column = self.columns[self._columns_sig[i]]
            width = cells[i].cell_len
            if width > column.content_width:
                column.content_width = width

    def current_key(self) -> str | None:
        if not self.row_count:
            return None
        try:
            return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except Exception:  # the cursor is past the last row while rows are replaced
            return None

    def current_row(self) -> Row | None:
        key = self.current_key()
        return None if key is None else self.rows_by_key.get(key)

