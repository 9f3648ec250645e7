"""The jobq monitor app: polls a ``Source`` in a thread, renders views, runs actions.

Invariants and hazards:

* Reads and draws come at the refresh loop's pace (``refresh``): at most one poll at a
  time, in the ``Poller``'s thread, and at most one screen update a second. Detail reads
  and actions run in thread workers; widgets are touched only on the event loop.
* Database text reaches widgets only as ``Text`` from ``views.cells.literal`` (never as
  markup).
* Which view is shown is data (``views.VIEWS``): nothing here branches on a view's name,
  and the keys that act in one view are the view's own (``View.keys``), bound from what
  the views declare (``bindings``).
* The filter box's keys are the box's business (``filter_box``), the preview the
  pane's (``preview``), the write actions ``actions``'.
"""
from __future__ import annotations

import gc
from pathlib import Path
from typing import TypeVar

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.geometry import Size
from textual.widgets import Footer, Static, TabbedContent
from textual.screen import Screen
from textual.widget import Widget

from jobq_core import SYSTEM_CLOCK, Clock

from .actions import WriteActions
from .bindings import MAIN_VIEW_ACTIONS, VIEW_ACTIONS, WRITE_ACTIONS, app_bindings
from .filter_box import OPEN as FILTERING
from .filter_box import FilterBox, FilterKeys
from jobq_core.presentation.views.filters import Filter, group_filter
from .pacer import RefreshPacer
from .preview import PreviewPane
from .refresh import RefreshLoop
from .screens import DetailScreen, HelpScreen
from jobq_core.presentation.views.snapshot import Snapshot
from jobq_core.presentation.views.sorting import SortOrders
from .source import Source
from .status import banner_text, status_text
from .views import VIEWS, View, sort_rows, tab_key
from .views.cells import literal
from .widgets.containers import BlankColumn, BlankPane, BlankRow, BlankScreen, BlankTabs
from .widgets.header import HeaderState, StatusHeader, TextLine
from .widgets.tables import JobTable

WIDE = 120  # columns from which the rich layout (more columns, longer sparklines) is used
MIN_SIZE = (50, 12)  # below this: "terminal too small"
RICH = (160, 40)  # from this size: queues and workers in a side column too
W = TypeVar("W", bound=Widget)


class MonitorApp(RefreshLoop, WriteActions, FilterKeys, App):
    CSS_PATH = Path(__file__).with_name("app.tcss")
    TITLE = "jobq"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = app_bindings()

    def __init__(self, source: Source, *, interval: float = 1.0, beat: float = 10.0,
                 clock: Clock | None = None, live: bool = True):
        super().__init__()
        self.source = source
        self.interval = interval
        self.pacer = RefreshPacer(interval)
        self.beat = beat
        self.clock: Clock = clock or source.clock or SYSTEM_CLOCK
        self.live = live
        self.filter = Filter()
        self._filter_before = self.filter  # to return to after a #123 jump
        self.grouped = True
        self.sort_by = SortOrders()  # View.layout -> (column index, reverse)
        self.snapshot: Snapshot | None = None
        self.error: str | None = None
        self.message = Text()
        self._term_width = 0
        self._rich = False
        self._table_key: tuple | None = None
        self._mounted = False
        self._tabs: TabbedContent | None = None
        self._tables: dict[str, JobTable] = {}
        self._widgets: dict[str, Widget] = {}

    _side = [v for v in VIEWS.values() if v.side]  # also in the rich layout's side column

    @property
    def effective_interval(self) -> float:
        """The refresh interval in use: longer than asked while refreshes are costly."""
        return self.pacer.interval

    def get_default_screen(self) -> Screen:
        return BlankScreen(id="_default")

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="banner")
        yield StatusHeader(id="header")
        with BlankRow(id="body"):
            with Vertical(id="side"):  # only in the rich layout (see app.tcss)
                for v in self._side:
                    yield Static(Text(v.title, "bold"), classes="side-title")
                    yield JobTable(id=f"side-{v.name}", classes="side-table")
            with BlankColumn(id="right"):
                with BlankTabs(initial=next(iter(VIEWS)), id="tabs"):
                    for name, v in VIEWS.items():
                        with BlankPane(f"{tab_key(v)} {v.title}", id=name):
                            yield JobTable(id=f"table-{name}")
                # rich layout: the highlighted job
                yield PreviewPane(self.source, self.clock, id="preview")
        yield TextLine(id="status")
        yield FilterBox(id="filter")
        yield Static(Text("terminal too small"), id="too-small")
        yield Footer()

    def on_mount(self) -> None:
        self._mounted = True
        for widget in [*self.query("Tabs"), *self.query(".side-table")]:
            widget.can_focus = False  # keys go to the main table; the mouse still works
        self._apply_size()
        self._schedule_beat()
        self.request_poll()
        self.table().focus()
        # Everything made so far (Textual, the widgets) lives as long as the app: taken
        # out of the collector's full passes, which then scan only what came since.
        # ``bench/tui_tricks.py`` (drain, All view at 200x50, 60 s, two pairs, same run):
        # a full pass costs 11-14 ms of CPU with it, 44-48 ms without (3 passes a minute
        # either way), and the monitor 2.84 % of a core against 3.16 %.
        self.call_after_refresh(gc.freeze)

    def on_resize(self, event: events.Resize) -> None:
        self._apply_size(event.size)
        self.render_all()

    def _apply_size(self, size: Size | None = None) -> None:
        w, h = size or self.size
        self._term_width = w
        self._main.set_class(w < MIN_SIZE[0] or h < MIN_SIZE[1], "-too-small")
        self._main.set_class(h < 20, "-short")
        self._main.set_class(w >= RICH[0] and h >= RICH[1], "-rich")
        self._rich = w >= RICH[0] and h >= RICH[1]

    @property
    def _main(self):
        """The monitor's own screen (widgets live there even while a modal is on top)."""
        return self.screen_stack[0] if self.screen_stack else self.screen

    @property
    def wide(self) -> bool:
        return (self._term_width or self.size.width) >= WIDE

    @property
    def view(self) -> str:
        """The name of the view shown (its tab's id)."""
        if self._tabs is None:
            self._tabs = self._main.query_one("#tabs", TabbedContent)
        return self._tabs.active or next(iter(VIEWS))

    @property
    def shown(self) -> View:
        return VIEWS[self.view]

    def table(self, view: str | None = None) -> JobTable:
        name = view or self.view
        table = self._tables.get(name)
        if table is None:  # found once: a query walks the screen's widgets
            table = self._tables[name] = self._main.query_one(f"#table-{name}", JobTable)
        return table

    def _widget(self, selector: str, kind: type[W]) -> W:
        """A widget of the monitor's screen that is always there, found once (a query
        walks the screen's widgets, and these are drawn every second)."""
        widget = self._widgets.get(selector)
        if widget is None:
            widget = self._widgets[selector] = self._main.query_one(selector, kind)
        return widget  # type: ignore[return-value]

    def on_unmount(self) -> None:
        self.stop_polling()
        gc.unfreeze()  # collectable again (a process that runs more than one app)

    def _modal_open(self) -> bool:
        return len(self.screen_stack) > 1

    # -- rendering ------------------------------------------------------------------------

    def render_all(self) -> None:
        if not self._mounted or not self.screen_stack:
            return  # before mount or while shutting down
        try:
            self._render_all()
        except NoMatches:  # a timer fired while the app exits and widgets are torn down
            return
        except Exception as e:  # a bug, or data no view expected: say so, stay up
            self._table_key = None  # draw again at the next tick
            self.say(f"display failed: {type(e).__name__}: {e}", "bold red")

    def _render_all(self) -> None:
        now = self.clock.now()
        frozen_at = self.pacer.frozen_at(self.snapshot, now, self.live and not self.error)
        st = HeaderState(self.source.path, self.live, self.effective_interval,
                         self.source.read_only, self.beat)
        self._widget("#header", StatusHeader).show_state(self.snapshot, now, st, self.wide,
                                                         frozen_at)
        banner = self._widget("#banner", Static)
        text = banner_text(self.error, self.snapshot.blockers if self.snapshot else ())
        if text is not None:
            banner.update(text)
        banner.display = text is not None
        # Rows are built again only when what they show changed (the data, the view, its
        # order, the width); otherwise the tables just move their clock: the cells that
        # tick are worked out for the rows in view (``JobTable.tick``). Either way at the
        # same moment as the header; frozen data is shown at its own time.
        now = now if frozen_at is None else frozen_at
        snap = self.snapshot
        key = (None if snap is None else
               (snap.read_at, snap.version, snap.view, snap.grouped, snap.filter),
               self.view, self.grouped, tuple(self.sort_by.items()), self.filter,
               self.wide, self._rich, self.error)
        if key == self._table_key:
            self.table().tick(now)
            if self._rich:
                for v in self._side:
                    self._widget(f"#side-{v.name}", JobTable).tick(now)
            self._render_status()
            return
        self._table_key = key
        self._render_table(now)
        if self._rich and self.snapshot is not None:
            self._render_side(now)
            self._want_preview()
        self._render_status()

    def _render_table(self, now: float) -> None:
        v = self.shown
        table = self.table(v.name)
        layout = v.layout(self.grouped)
        col, rev = self.sort_by.of(layout)
        # the sort column says so in its header
        table.set_columns(self.sort_by.marked(layout, v.columns(self.grouped, self.wide)))
        snap = v.snapshot_for(self.snapshot, self.grouped)
        if snap is None:
            return  # this view's rows have not been read yet: the poll is on its way
        rows = v.rows(snap, wide=self.wide, beat=self.beat)
        if col is not None:
            sort_rows(rows, col, rev)
        table.set_rows(rows, now)

    def _want_preview(self) -> None:
        """Show the highlighted job below the table (rich layout only)."""
        if not self._rich:
            return
        row = self.table().current_row()
        self._widget("#preview", PreviewPane).show_job(
            None if row is None else row.job_id,
            None if self.snapshot is None else self.snapshot.version)

    def on_job_table_row_highlighted(self, event: JobTable.RowHighlighted) -> None:
        if event.table is self.table():
            self._want_preview()

    def _render_side(self, now: float) -> None:
        for v in self._side:
            table = self._widget(f"#side-{v.name}", JobTable)
            table.set_columns(v.columns(False, False))
            snap = v.snapshot_for(self.snapshot, self.grouped)
            if snap is not None:
                table.set_rows(v.rows(snap, wide=False, beat=self.beat), now)

    def _render_status(self) -> None:
        v, table = self.shown, self.table()
        sorted_by = self.sort_by.label(v.layout(self.grouped),
                                       v.columns(self.grouped, self.wide))
        self._widget("#status", TextLine).show(status_text(
            table.row_count, self.snapshot is not None, self.filter, sorted_by,
            self.grouped if v.groups else None, self.message, v.searched(self.filter)))

    def say(self, message: str | Text, style: str = "") -> None:
        """Show a one-line message in the status line (plain text, never markup)."""
        self.message = message if isinstance(message, Text) else literal(message, style)
        self._render_status()

    # -- events ---------------------------------------------------------------------------

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.message = Text()
        self.refresh_bindings()  # keys that belong to one view (P) come and go
        self.render_all()
        self.table().focus()
        self.request_poll()

    def on_job_table_row_selected(self, event: JobTable.RowSelected) -> None:
        self.action_open()

    def on_job_table_header_selected(self, event: JobTable.HeaderSelected) -> None:
        self.sort_by.click(self.shown.layout(self.grouped), event.column_index)
        self.render_all()

    # -- actions --------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in WRITE_ACTIONS and self.source.read_only:
            return False  # hidden, not greyed out: a read-only monitor has no such keys
        if action in VIEW_ACTIONS and not self.shown.offers(action):
            return False  # not offered here: the key's next binding says where it acts
        if action == "pause" and isinstance(self.screen, DetailScreen):
            return True  # the detail screen is live too
        if action == "filter" and self._main.has_class(FILTERING):
            return False  # a / typed in the filter box is part of the filter
        if self._modal_open() and action in MAIN_VIEW_ACTIONS:
            return False  # the main view's keys do nothing on the detail screen
        return True

    def action_view(self, view: str) -> None:
        self._main.query_one("#tabs", TabbedContent).active = view

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_pause(self) -> None:
        self.live = not self.live
        self.say("live refresh resumed" if self.live else "paused: p resumes, r refreshes once")
        if self._modal_open():  # the status line is under the detail screen
            self.notify("live refresh resumed" if self.live else "paused: p resumes, r reloads",
                        markup=False, timeout=3)
        self.render_all()
        if self.live:
            self.request_poll()
        else:
            self.stop_timed_poll()

    def action_refresh(self) -> None:
        self.request_poll(force=True)

    def action_sort(self) -> None:
        layout = self.shown.layout(self.grouped)
        if self.sort_by.step(layout, len(self.shown.columns(self.grouped, self.wide))):
            self.say("sorted as read (the view's own order)")
        self.render_all()

    def action_sort_reverse(self) -> None:
        self.sort_by.reverse(self.shown.layout(self.grouped))
        self.render_all()

    def action_group(self) -> None:
        if self.shown.groups:
            self.grouped = not self.grouped
            self.render_all()
            self.request_poll()

    def action_open(self) -> None:
        row = self.table().current_row()
        if row is None:
            return
        if row.group is not None:  # a dead group: drill down to its jobs
            self.filter = group_filter(row.group, self.filter.words)
            self.grouped = False
            self.render_all()
            self.request_poll()
            return
        if row.job_id is not None:
            self.open_job(row.job_id)

    def open_job(self, job_id: int) -> None:
        """The job's detail screen, live while the monitor is."""
        self.push_screen(DetailScreen(job_id, self.source, clock=self.clock,
                                      interval=self.interval, live=lambda: self.live))
