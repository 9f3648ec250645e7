"""The monitor's cells as Rich ``Text``: the shared view model's cells
(``jobq_core.presentation.views.cells``) drawn, and the text the monitor composes itself
(the header, the detail screen, the status line).

Invariants:

* A string from the database reaches a widget only through ``literal`` or a shared
  ``Cell`` (``rich_cell``): cleaned of every control and invisible character, and a
  ``Text`` that is never parsed as markup, so ``[bold]`` or ``[@click=app.quit]`` from the
  database show as those characters. Never pass database strings to anything that parses
  markup (``Static("...")``, ``notify(markup=True)``, f-strings into markup).
* ``text`` is for words the monitor composed itself, with no database content inside.
* A state is drawn only by ``badge``: glyph and word, so it reads without colour.
"""
from __future__ import annotations

import functools

from rich.text import Text

from jobq_core.common.textsafe import clean
from jobq_core.presentation.display import Badge
from jobq_core.presentation.views.cells import BAD, DIM, OK, WARN, Cell, Shown, Timed, age

__all__ = ["BAD", "DIM", "OK", "WARN", "Timed", "age", "badge", "literal", "rich_cell",
           "rich_cells", "text"]


def literal(value: object, style: str = "", *, multiline: bool = False,
            limit: int | None = None) -> Text:
    """A ``Text`` showing ``value`` (from the database, or anyone) literally."""
    return Text(clean(value, multiline=multiline, limit=limit), style=style,
                no_wrap=not multiline, overflow="ellipsis" if not multiline else "fold")


def text(s: str, style: str = "") -> Text:
    """Words the monitor composed itself (no database content inside)."""
    return Text(s, style=style, no_wrap=True, overflow="ellipsis")


def badge(b: Badge) -> Text:
    return rich_cell(Cell(b.label, b.style))


@functools.lru_cache(maxsize=8192)
def rich_cell(cell: Cell) -> Text:
    """A shared cell as ``Text``: the same ``Text`` for equal cells (a table sees an
    unchanged cell by identity, and a ``Text`` costs more than comparing a cell). Its text
    was made safe when the cell was made (``cells.literal``). Not to be modified."""
    t = Text(cell.text, style=cell.style, no_wrap=True, overflow="ellipsis",
             justify="right" if cell.right else None)
    for part, style in cell.more:
        t.append(part, style)
    return t


def rich_cells(cells: tuple[Shown, ...], now: float) -> tuple[Text, ...]:
    """A row's cells as shown at ``now``."""
    return tuple(rich_cell(c.at(now) if isinstance(c, Timed) else c) for c in cells)
