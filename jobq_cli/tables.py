"""Tables that fit the terminal by dropping and cutting the least useful columns first.

Rich, left to itself, cuts every column of a too-wide table to a few characters: at 80
columns ``jobq list`` showed ``18…`` for an id. Here each column says what it may lose:

* a column with nothing in any row is left out;
* ``fixed`` columns (ids, statuses, counts, times) are never cut; a table keeps them whole
  even when they alone are wider than the terminal (the line then wraps);
* ``keep`` orders the columns for dropping: when even every cuttable column at its
  ``least`` width does not fit, the column with the lowest ``keep`` goes first; columns
  with a ``keep`` under ``OPTIONAL`` go even before another column is cut below ``want``;
* ``shrink`` orders the cuttable columns for cutting: the lowest is cut first, down to
  the ``want`` width it still reads well at, then the next; only when all are there are
  they cut further, in the same order, down to ``least``;
* ``middle`` cuts a cell in its middle instead of its end: an error line keeps its
  exception type and the specifics at its end that tell one failure from another.

Cells are ``Text`` built by the caller from cleaned database text (``render.cell``) or
plain strings the CLI composed itself; nothing here parses markup.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Console, JustifyMethod
from rich.table import Table
from rich.text import Text

from jobq_core.presentation.display import cut_middle, cut_widths, middle_cut

GAP = 2  # columns between two columns (Rich's padding, collapsed)
NEVER_DROPPED = 100  # a column with this ``keep`` or more is never dropped
OPTIONAL = 40  # a column with less ``keep`` goes before any other is cut below its ``want``


@dataclass(frozen=True)
class Col:
    header: str
    keep: int  # higher: dropped later; NEVER_DROPPED and above: never
    fixed: bool = False  # never cut (ids, statuses, numbers, times)
    least: int = 0  # a cuttable column is cut no narrower than this
    want: int = 0  # ... and only below this once every other column is at its ``want``
    shrink: int = 0  # cuttable columns are cut lowest first
    middle: bool = False  # cut in the middle, keeping the start and the end
    justify: JustifyMethod = "left"


def fit(cols: Sequence[Col], rows: Sequence[Sequence[Text | str]],
        width: int) -> tuple[list[int], list[int]]:
    """Which columns to show (indexes, in order) and their widths, for ``width``."""
    natural = [max([len(c.header), *(_len(r[i]) for r in rows)]) for i, c in enumerate(cols)]
    least = [n if c.fixed else min(n, max(c.least, len(c.header)))
             for c, n in zip(cols, natural)]
    # A column with nothing in it takes room and says nothing (WORKER of pending jobs).
    shown = [i for i, c in enumerate(cols)
             if c.keep >= NEVER_DROPPED or any(_len(r[i]) for r in rows)]

    def need(widths: Sequence[int], ix: Sequence[int]) -> int:
        return sum(widths[i] for i in ix) + GAP * (len(ix) - 1)

    while need(least, shown) > width and len(shown) > 1:
        droppable = [i for i in shown if cols[i].keep < NEVER_DROPPED]
        if not droppable:
            break
        shown.remove(min(droppable, key=lambda i: cols[i].keep))
    # Optional columns show only when every other column reads well (at its ``want``).
    want = [n if c.fixed else min(n, max(least[i], c.want)) for i, (c, n)
            in enumerate(zip(cols, natural))]
    while need(want, shown) > width:
        optional = [i for i in shown if cols[i].keep < OPTIONAL]
        if not optional:
            break
        shown.remove(min(optional, key=lambda i: cols[i].keep))
    cuttable = sorted((i for i in shown if not cols[i].fixed), key=lambda i: cols[i].shrink)
    widths = cut_widths(natural, [(max(least[i], c.want), least[i]) for i, c in enumerate(cols)],
                        cuttable, need(natural, shown) - width)
    return shown, [widths[i] for i in shown]


def table(cols: Sequence[Col], rows: Sequence[Sequence[Text | str]], width: int) -> Table:
    """A Rich table of ``rows`` fitted to ``width`` (see ``fit``)."""
    shown, widths = fit(cols, rows, width)
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    for i, w in zip(shown, widths):
        c = cols[i]
        t.add_column(c.header, width=w, no_wrap=True, overflow="ellipsis", justify=c.justify)
    for r in rows:
        t.add_row(*(_cut(r[i], w, cols[i].middle) for i, w in zip(shown, widths)))
    return t


def print_table(console: Console, cols: Sequence[Col], rows: Sequence[Sequence[Text | str]],
                ) -> None:
    """Print fitted to the console; wider than it when the fixed columns alone need it
    (a wrapped line is better than a cut id)."""
    shown, widths = fit(cols, rows, console.width)
    need = sum(widths) + GAP * (len(widths) - 1)
    if need > console.width:
        console = Console(file=console.file, width=need, highlight=False, markup=False,
                          emoji=False, no_color=console.no_color,
                          force_terminal=console.is_terminal)
    console.print(table(cols, rows, console.width))


def _len(cell: Text | str) -> int:
    return cell.cell_len if isinstance(cell, Text) else len(cell)


def _cut(cell: Text | str, width: int, middle: bool) -> Text | str:
    """The cell cut to ``width``: at its end (Rich's ellipsis) or, for ``middle``, with
    its start and end kept (``display.cut_middle``), each part in its own style."""
    if not middle or _len(cell) <= width:
        return cell
    if isinstance(cell, str):
        return cut_middle(cell, width)
    if width < 8:
        return Text(cut_middle(cell.plain, width), style=cell.style)
    head, tail = middle_cut(cell.plain, width)
    return Text.assemble(cell[:head], "…", cell[tail:], style=cell.style)
