"""The order the operator chose for each set of columns (``View.layout``): a column and
whether reversed; none, the view's own order (as read). No Textual here."""
from __future__ import annotations

from dataclasses import replace

from .base import Column

Layout = tuple[str, bool]


class SortOrders(dict[Layout, tuple[int, bool]]):
    def of(self, layout: Layout) -> tuple[int | None, bool]:
        return self.get(layout, (None, False))

    def step(self, layout: Layout, columns: int) -> bool:
        """``s``: sort by the next column; after the last, back to the order as read
        (then True)."""
        col, rev = self.of(layout)
        if col is not None and col + 1 >= columns:
            self.pop(layout, None)
            return True
        self[layout] = (0 if col is None else col + 1, rev)
        return False

    def reverse(self, layout: Layout) -> None:
        """``S``: the other way (by the first column if none was chosen)."""
        col, rev = self.of(layout)
        self[layout] = (col if col is not None else 0, not rev)

    def click(self, layout: Layout, column: int) -> None:
        """A header clicked: sort by that column, or reverse it if it is the one."""
        col, rev = self.of(layout)
        self[layout] = (column, not rev if col == column else False)

    def label(self, layout: Layout, columns: list[Column]) -> str | None:
        """``KIND ▲``: the sort column's label and direction, if one is chosen."""
        col, rev = self.of(layout)
        if col is None or col >= len(columns):
            return None
        return f"{columns[col].label} {'▼' if rev else '▲'}"

    def marked(self, layout: Layout, columns: list[Column]) -> list[Column]:
        """The columns, the sort column's header saying so."""
        label = self.label(layout, columns)
        if label is None:
            return columns
        col = self.of(layout)[0]
        return [replace(c, label=label) if i == col else c for i, c in enumerate(columns)]


__all__ = ["SortOrders"]
