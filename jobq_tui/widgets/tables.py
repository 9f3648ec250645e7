"""JobTable: a keyed table drawn line by line, where a changed row costs one row.

Why not ``DataTable``: any ``update_cell`` there invalidates the render cache of the whole
table, and every cell is then redrawn through Rich's layout pipeline. With countdowns that
tick every second, a screen of running jobs cost 7-15 % of a core at idle. Here each row
is one cached ``Strip``, rebuilt only when one of its cells changes; a tick that moves
twenty countdowns redraws twenty lines.

What changed between two sets of rows is worked out by ``RowModel`` (``table_model``,
no Textual); this module draws it.

Invariants:

* Cells are ``Text`` built by ``views.cells``: never markup, never controls. A cell that
  moves with the clock is ``Timed``: worked out when it is drawn, at the time the table
  was given (``set_rows``, then ``tick`` once a second), so a tick costs the rows in
  view, however many rows were read.
* ``set_rows`` takes the whole list in display order and applies the difference by key;
  the cursor stays on the same row key, so a job does not slip from under the cursor, and
  a highlighted row in view stays in view (and in place) as rows arrive above it.
* ``j``/``k`` and ``enter`` never act on a row out of view: the first press shows it.
* Line 0 is the column header, fixed while the rows scroll under it.
* Marked rows (``space``) start with ``MARK`` in place of their first blank, so a mark
  reads without colour too; a mark goes when its row leaves the table.
"""
from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Offset, Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from jobq_core.presentation.display import cut_widths, middle_cut

from jobq_core.presentation.views.base import Column, Row
from .table_model import Change, ColumnChange, RowModel, RowsChange

_GAP = 1  # blank cells either side of each column
MARK = "•"


class JobTable(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {"jobtable--header", "jobtable--cursor", "jobtable--marked"}
    DEFAULT_CSS = """
    JobTable {
        background: $surface;
        color: $foreground;
        & > .jobtable--header { background: $panel; color: $foreground; text-style: bold; }
        & > .jobtable--marked {
            text-style: bold;
        }
        & > .jobtable--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
        }
        &:focus > .jobtable--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
    }
    """
    BINDINGS = [
        Binding("up,k", "cursor(-1)", "up", show=False),
        Binding("down,j", "cursor(1)", "down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("pagedown", "page(1)", "page down", show=False),
        Binding("home,g", "edge(-1)", "top", show=False),
        Binding("end,G", "edge(1)", "bottom", show=False),
        Binding("enter", "select", "detail", show=False),
        Binding("left,h", "sideways(-8)", "left", show=False),
        Binding("right,l", "sideways(8)", "right", show=False),
    ]

    class RowHighlighted(Message):
        def __init__(self, table: JobTable, key: str | None):
            super().__init__()
            self.table = table
            self.key = key

    class RowSelected(Message):
        def __init__(self, table: JobTable, key: str | None):
            super().__init__()
            self.table = table
            self.key = key

    class HeaderSelected(Message):
        def __init__(self, table: JobTable, column_index: int):
            super().__init__()
            self.table = table
            self.column_index = column_index

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.model = RowModel()
        self._widths: list[int] = []  # as drawn: the model's natural widths fitted
        self._strips: dict[str, Strip] = {}  # row key -> rendered row, without cursor
        self._header: Strip | None = None
        self._cell_cache: dict[tuple, list[Segment]] = {}
        self._base: Style | None = None  # self.rich_style: it walks the ancestors each time
        self._view = (Offset(0, 0), 0)  # scroll offset and width, for one update's lines
        self.cursor_row = 0

    # -- data -----------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self.model.rows)

    @property
    def rows_by_key(self) -> dict[str, Row]:
        return self.model.by_key

    @property
    def marked(self) -> set[str]:
        """The keys of the marked rows."""
        return self.model.marked

    def get_row_at(self, index: int) -> list[Text]:
        """The cells of a row as shown now."""
        cells, change = self.model.cells(index)
        if change is not None:
            self._strips.pop(change.key, None)
        return list(cells)

    def set_columns(self, cols: list[Column]) -> None:
        change = self.model.set_columns(cols)
        if change is ColumnChange.LABELS:
            self._fit_widths()
            self.refresh()
        elif change is ColumnChange.NEW:
            self._strips.clear()
            self._fit_widths()
            self._resize()

    def set_rows(self, rows: list[Row], now: float) -> None:
        """Show ``rows`` in this order, their ``Timed`` cells at ``now``; only rows whose
        cells changed are redrawn. The cursor stays on its row, and a row in view stays
        where it was on the screen while rows arrive above it (the view scrolls with it)."""
        keep = self.current_key()
        was_at = self.cursor_row
        was_seen = self._cursor_in_view()
        change = self.model.set_rows(rows, now)
        index = self.model.index
        for c in change.changed:
            self._strips.pop(c.key, None)
        for key in [k for k in self._strips if k not in index]:
            del self._strips[key]
        self._redraw(change)
        if keep is not None and keep in index:
            self.cursor_row = index[keep]
        self.cursor_row = max(0, min(self.cursor_row, len(rows) - 1))
        self._resize()
        moved = self.cursor_row - was_at
        if moved and was_seen:
            self.scroll_to(y=max(0, self.scroll_offset.y + moved), animate=False, force=True)
            self.refresh()

    def tick(self, now: float) -> None:
        """Show the same rows at ``now``: the ``Timed`` cells of the rows in view are
        worked out again and only those that changed are redrawn. Rows out of view catch
        up when they are drawn (``render_line``)."""
        if now == self.model.now:
            return
        top = self.scroll_offset.y
        change = self.model.tick(now, top, top + max(1, self.size.height - 1))
        for c in change.changed:
            self._strips.pop(c.key, None)
        self._redraw(change)

    def _redraw(self, change: RowsChange) -> None:
        if change.widths:  # every line moves: fit the columns again
            self._fit_widths()
            self.refresh()
        elif change.order:
            self.refresh()
        elif change.changed:
            self._refresh_cells(change.changed)

    def current_key(self) -> str | None:
        rows = self.model.rows
        if not rows:
            return None
        return rows[min(self.cursor_row, len(rows) - 1)].key

    def current_row(self) -> Row | None:
        key = self.current_key()
        return None if key is None else self.model.by_key.get(key)

    def toggle_mark(self, key: str) -> None:
        if self.model.toggle_mark(key):
            self._refresh_row(self.model.index[key])

    def clear_marks(self) -> None:
        for index in self.model.clear_marks():
            self._refresh_row(index)

    def marked_rows(self) -> list[Row]:
        """The marked rows, in display order."""
        return self.model.marked_rows()

    def move_cursor(self, *, row: int, animate: bool = False, scroll: bool = True) -> None:
        if not self.model.rows:
            return
        row = max(0, min(row, len(self.model.rows) - 1))
        if row != self.cursor_row:
            old, self.cursor_row = self.cursor_row, row
            self._refresh_row(old)
            self._refresh_row(row)
            self.post_message(self.RowHighlighted(self, self.current_key()))
        if scroll:
            self._scroll_to_cursor()

    # -- drawing --------------------------------------------------------------------------

    def _fit_widths(self) -> None:
        """Column widths from the widest cells, cut to the screen's width when they do not
        fit, the least useful text first (``Column``)."""
        self._widths = self._fitted(self.model.natural)
        self._strips.clear()
        self._header = None

    def _fitted(self, natural: list[int]) -> list[int]:
        # Room for the vertical scrollbar always: it comes and goes with the row count.
        room = self.size.width - self.styles.scrollbar_size_vertical
        over = sum(w + 2 * _GAP for w in natural) - room
        if over <= 0 or not room:
            return list(natural)
        cols = self.model.columns
        order = sorted((i for i, c in enumerate(cols) if c.shrink is not None),
                       key=lambda i: cols[i].shrink)
        floors = [(max(c.least, c.want, len(c.label)), max(c.least, len(c.label)))
                  for c in cols]
        floors = [(min(w, n), min(least, n)) for (w, least), n in zip(floors, natural)]
        return cut_widths(natural, floors, order, over)

    def on_resize(self, event: events.Resize) -> None:
        if self.model.natural:
            self._fit_widths()
            self._resize()
            self.refresh()

    def _resize(self) -> None:
        width = sum(w + 2 * _GAP for w in self._widths)
        self.virtual_size = Size(width, len(self.model.rows) + 1)

    def _line(self, cells, style: Style) -> Strip:
        segments: list[Segment] = []
        length = 0
        for cell, width, col in zip(cells, self._widths, self.model.columns):
            segments += self._cell(cell, width, col.middle, style)
            length += width + 2 * _GAP
        # Each cell is exactly its width plus the gaps (``_cell``): the strip is given its
        # length rather than measuring every segment again, which was a third of drawing
        # a changed row (``bench/tui_cpu.py``, All view in a drain). Neighbours of one
        # style are joined (most cells are plain text over the table's style, padded with
        # it): every later pass over the line (Textual's colour filter, the compositor's
        # cuts, the terminal's output) goes segment by segment.
        return Strip(Segment.simplify(segments), length)

    def _cell(self, cell: Text, width: int, middle: bool, base: Style) -> list[Segment]:
        """One cell padded to ``width`` (plus the gaps), over the ``base`` style, cached:
        in a row that a tick redraws, most cells (id, kind, queue) are the same as a
        second ago."""
        key = (cell.plain, str(cell.style), tuple(cell.spans), cell.justify, width, middle,
               base)
        segments = self._cell_cache.get(key)
        if segments is None and not cell.spans and cell.cell_len <= width:
            # One style and room enough, as most cells (ids, counts, countdowns): the
            # segments directly, without Rich's render of a Text (a fifth of the cost).
            console = self.app.console
            style = cell.style if isinstance(cell.style, Style) else console.get_style(
                cell.style or "", default=Style.null())
            pad, gap = " " * (width - cell.cell_len), " " * _GAP
            left, right = (gap + pad, gap) if cell.justify == "right" else (gap, pad + gap)
            segments = [Segment(left)]
            if cell.plain:
                segments.append(Segment(cell.plain, style))
            segments.append(Segment(right))
            segments = list(Segment.apply_style(segments, base))
            self._cache_cell(key, segments)
        if segments is None:
            text = cell.copy()
            text.end = ""
            if text.cell_len > width and middle and width >= 8:
                head, tail = middle_cut(text.plain, width)
                cut = text[:head]
                cut.append("…")
                cut.append_text(text[tail:])
                cut.justify = text.justify
                text = cut
            elif text.cell_len > width:
                text.truncate(width, overflow="ellipsis")
            pad = width - text.cell_len
            line = Text(" " * _GAP, end="")
            if pad and text.justify == "right":
                line.append(" " * pad)
                line.append_text(text)
            else:
                line.append_text(text)
                line.append(" " * pad)
            line.append(" " * _GAP)
            segments = list(Segment.apply_style(
                [s for s in line.render(self.app.console) if s.text != "\n"], base))
            self._cache_cell(key, segments)
        return segments

    def _cache_cell(self, key: tuple, segments: list[Segment]) -> None:
        if len(self._cell_cache) > 20_000:
            self._cell_cache.clear()
        self._cell_cache[key] = segments

    def render_lines(self, crop: Region) -> list[Strip]:
        # Where the view is scrolled to and how wide it is, found once for the lines of
        # one update: ``self.size`` looks the widget up from the screen every time.
        self._view = (self.scroll_offset, self.size.width)
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        (scroll_x, scroll_y), width = self._view
        base = self._base
        if base is None:
            base = self._base = self.rich_style
        if y == 0:
            if self._header is None:
                header_style = base + self.get_component_rich_style("jobtable--header")
                labels = [Text(c.label) for c in self.model.columns]
                self._header = self._line(labels, header_style)
            strip = self._header
        else:
            index = scroll_y + y - 1
            if index >= len(self.model.rows):
                return Strip.blank(width, base)
            key = self.model.rows[index].key
            cells, change = self.model.cells(index)  # freshened: scrolled into view since
            strip = None if change is not None else self._strips.get(key)
            if strip is None:
                strip = self._strips[key] = self._line(cells, base)
            if key in self.model.marked:
                strip = self._with_mark(strip)
            if index == self.cursor_row:
                # Textual keeps the component's style until the table's next refresh:
                # worked out again then, once (46 µs at 200x50).
                cursor = self.get_component_rich_style("jobtable--cursor")
                strip = Strip(Segment.apply_style(list(strip), post_style=cursor),
                              strip.cell_length)
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _with_mark(self, strip: Strip) -> Strip:
        segments = list(strip)
        if segments and segments[0].text.startswith(" "):
            first = segments[0]
            segments[0] = Segment(MARK + first.text[1:], first.style)
        style = self.get_component_rich_style("jobtable--marked")
        return Strip(Segment.apply_style(segments, post_style=style))

    def _refresh_cells(self, changed: list[Change]) -> None:
        """Redraw only the cells that changed (a ticking countdown is one cell a row), as
        one region per column from the first row it changed in to the last: the screen's
        compositor then repaints those columns' lines, not whole lines, and is asked once
        per column instead of once per cell."""
        top, height = self.scroll_offset.y, self.size.height
        spans: dict[int, list[int]] = {}  # column -> [first line, last line]
        for change in changed:
            index, old, new = change.index, change.old, change.new
            y = index - top + 1
            if not 1 <= y < height:
                continue
            if old is None or len(old) != len(new):
                self._refresh_row(index)
                continue
            for col, (a, b) in enumerate(zip(old, new)):
                if a != b:
                    span = spans.setdefault(col, [y, y])
                    span[0], span[1] = min(span[0], y), max(span[1], y)
        x = -self.scroll_offset.x
        for col, width in enumerate(self._widths):
            if col in spans:
                first, last = spans[col]
                self.refresh(Region(max(0, x), first, width + 2 * _GAP, last - first + 1))
            x += width + 2 * _GAP

    def _refresh_row(self, index: int) -> None:
        y = index - self.scroll_offset.y + 1
        if 1 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def _cursor_in_view(self) -> bool:
        top = self.scroll_offset.y
        return top <= self.cursor_row < top + max(1, self.size.height - 1)

    def _scroll_to_cursor(self) -> None:
        visible = max(1, self.size.height - 1)
        top = self.scroll_offset.y
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False)
        elif self.cursor_row >= top + visible:
            self.scroll_to(y=self.cursor_row - visible + 1, animate=False)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._base = None
        self._strips.clear()
        self._cell_cache.clear()
        self._header = None

    # -- input ----------------------------------------------------------------------------

    def action_cursor(self, step: int) -> None:
        if self.model.rows and not self._cursor_in_view():
            self._scroll_to_cursor()  # first show where the cursor is: never move it unseen
            return
        self.move_cursor(row=self.cursor_row + step)

    def action_page(self, step: int) -> None:
        self.move_cursor(row=self.cursor_row + step * max(1, self.size.height - 2))

    def action_edge(self, step: int) -> None:
        self.move_cursor(row=0 if step < 0 else len(self.model.rows) - 1)

    def action_sideways(self, step: int) -> None:
        self.scroll_to(x=max(0, self.scroll_offset.x + step), animate=False)

    def action_select(self) -> None:
        if self.model.rows and not self._cursor_in_view():
            self._scroll_to_cursor()  # never open a row the operator cannot see
            return
        if self.model.rows:
            self.post_message(self.RowSelected(self, self.current_key()))

    def on_click(self, event: events.Click) -> None:
        if event.y == 0:
            x = event.x + self.scroll_offset.x
            edge = 0
            for i, width in enumerate(self._widths):
                edge += width + 2 * _GAP
                if x < edge:
                    self.post_message(self.HeaderSelected(self, i))
                    break
            return
        index = self.scroll_offset.y + event.y - 1
        if 0 <= index < len(self.model.rows):
            again = index == self.cursor_row
            self.move_cursor(row=index)
            if again or event.chain > 1:
                self.action_select()

