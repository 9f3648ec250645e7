"""The jobq monitor app: polls a ``Source`` in a thread, renders views, runs actions.

Invariants and hazards:

* At most one poll runs at a time: the next is scheduled when the last one has finished
  (``_poll_done``), and a request made meanwhile just sets ``_again``.
* Polls run in the ``Poller``'s thread, detail reads and actions in thread workers;
  widgets are touched only on the event loop.
* One beat, just after each whole second of the clock (``_beat``), drives both: it
  starts a poll when one is due, and the poll's result is drawn with that second's
  countdowns; otherwise it re-renders rows from the last snapshot with the current time
  (countdowns, ages) without reading the database. So a second costs at most one screen
  update (with Textual, an update costs about as much as all it redraws, whatever
  changed: ``bench/tui_cpu.py``), and unchanged cells are not touched.
* Database text reaches widgets only as ``Text`` from ``views.cells.literal`` (never as
  markup).
* Which view is shown is data (``views.VIEWS``): nothing here branches on a view's name.
"""
from __future__ import annotations

import asyncio
import gc
import math
import time
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from rich.text import Text
from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.geometry import Size
from textual.widgets import Footer, Input, Static, TabbedContent
from textual.screen import Screen
from textual.widget import Widget
from textual.worker import Worker, WorkerState

from jobq_core import SYSTEM_CLOCK, Clock
from jobq_core.display import cut_middle

from .actions import WriteActions
from .filters import Filter, FilterError, group_filter, job_ref, parse_filter
from .poller import Poller
from .screens import DetailScreen, HelpScreen, detail_text
from .source import Snapshot, Source, Unavailable
from .views import ROW_LIMIT, VIEWS, View, sort_rows
from .views.cells import literal
from .widgets.containers import BlankColumn, BlankPane, BlankRow, BlankScreen, BlankTabs
from .widgets.header import HeaderState, StatusHeader, TextLine, stale_after
from .widgets.tables import JobTable

_MAIN_VIEW_ACTIONS = frozenset({"filter", "clear_filter", "pause", "refresh", "sort",
                                "sort_reverse", "group", "retry", "take_back", "retry_all",
                                "cancel_job", "mark", "view", "forget_lost", "pause_queue",
                                "elsewhere"})
_WRITE_ACTIONS = frozenset({"retry", "take_back", "retry_all", "cancel_job", "mark",
                            "forget_lost", "pause_queue", "elsewhere"})
# The view flag that an action key needs (``View``): without it, the key is not offered.
_VIEW_ACTIONS = {"retry": "retries", "take_back": "takes_back", "retry_all": "retries",
                 "cancel_job": "cancels", "forget_lost": "forgets", "pause_queue": "pauses"}
WIDE = 120  # columns from which the rich layout (more columns, longer sparklines) is used
# At most this share of a core goes to refreshing: reading the database and drawing what
# was read (the countdowns' beat between refreshes is not counted).
REFRESH_SHARE = 0.02
MIN_SIZE = (50, 12)  # below this: "terminal too small"
BEAT_AFTER = 0.01  # seconds past a whole second of the clock at which the beat comes
RICH = (160, 40)  # from this size: queues and workers in a side column too
W = TypeVar("W", bound=Widget)


class MonitorApp(WriteActions, App):
    CSS_PATH = Path(__file__).with_name("app.tcss")
    TITLE = "jobq"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("question_mark", "help", "help"),
        # priority: handled as the key arrives, before the keys queued behind it are
        # forwarded to the table (over ssh "/queue:mail" comes in one burst)
        Binding("slash", "filter", "filter", priority=True),
        Binding("escape", "clear_filter", "clear", show=False),
        Binding("p", "pause", "pause"),
        Binding("r", "refresh", "refresh", show=False),
        Binding("s", "sort", "sort"),
        Binding("S", "sort_reverse", "reverse", show=False),
        Binding("d", "group", "group", show=False),
        Binding("space", "mark", "mark", show=False),
        # The action keys show in the footer only in the views they act in (so the
        # footer fits 80 columns); elsewhere the key says which view it acts in.
        Binding("R", "retry", "retry"),
        Binding("R", "take_back", "take back"),
        Binding("A", "retry_all", "retry all"),
        Binding("K", "cancel_job", "cancel"),
        Binding("X", "forget_lost", "forget lost"),
        Binding("P", "pause_queue", "pause queue"),
        *[Binding(key, f"elsewhere('{key}')", show=False) for key in "RAKXP"],
        Binding("q", "quit", "quit"),
        *[Binding(str(i + 1), f"view('{name}')", v.title, show=False)
          for i, (name, v) in enumerate(VIEWS.items())],
    ]

    def __init__(self, source: Source, *, interval: float = 1.0, beat: float = 10.0,
                 clock: Clock | None = None, live: bool = True):
        super().__init__()
        self.source = source
        self.interval = interval
        self.effective_interval = interval  # longer while refreshes are costly (_poll_done)
        self._draws: tuple[float, float] = (0.0, 0.0)  # CPU of the last two fresh draws
        self.beat = beat
        self.clock: Clock = clock or source.clock or SYSTEM_CLOCK
        self.live = live
        self.filter = Filter()
        self._filter_before = self.filter  # to return to after a #123 jump
        self.grouped = True
        # View.layout -> (column index, reverse)
        self.sort_by: dict[tuple[str, bool], tuple[int, bool]] = {}
        self.snapshot: Snapshot | None = None
        self.error: str | None = None
        self.message = Text()
        self._polling = False
        self._again = False
        self._timer = None  # the next poll, when polls come faster than once a second
        self._beat_timer = None
        self._poll_started = 0.0  # monotonic
        self._term_width = 0
        self._rich = False
        self._table_key: tuple | None = None
        self._preview_key: tuple | None = None
        self._preview_sig: tuple = ()
        self._mounted = False
        self._poller: Poller | None = None  # started with the first poll
        self._tabs: TabbedContent | None = None
        self._tables: dict[str, JobTable] = {}
        self._widgets: dict[str, Widget] = {}

    def get_default_screen(self) -> Screen:
        return BlankScreen(id="_default")

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="banner")
        yield StatusHeader(id="header")
        with BlankRow(id="body"):
            with Vertical(id="side"):  # only in the rich layout (see app.tcss)
                yield Static(Text("Queues", "bold"), classes="side-title")
                yield JobTable(id="side-queues", classes="side-table")
                yield Static(Text("Workers", "bold"), classes="side-title")
                yield JobTable(id="side-workers", classes="side-table")
            with BlankColumn(id="right"):
                with BlankTabs(initial=next(iter(VIEWS)), id="tabs"):
                    for i, (name, v) in enumerate(VIEWS.items()):
                        with BlankPane(f"{i + 1} {v.title}", id=name):
                            yield JobTable(id=f"table-{name}")
                with VerticalScroll(id="preview"):  # rich layout: the highlighted job
                    yield Static(id="preview-body")
        yield TextLine(id="status")
        yield Input(placeholder='words  queue:Q kind:K worker:W error:"text"  #123 opens job 123',
                    id="filter")
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
        # out of the collector's full passes, which then scan only what came since. A
        # full pass during a drain: 38 ms before, 8 ms after (``bench/tui_cpu.py``).
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

    # -- polling --------------------------------------------------------------------------

    def request_poll(self, force: bool = False) -> None:
        """Poll now, or right after the poll in flight finishes."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self._polling:
            self._again = True
            return
        if not self.screen_stack:
            return
        if self._poller is None:
            self._poller = Poller(self.source, asyncio.get_running_loop(), self._poll_done)
        self._polling = True
        self._poll_started = time.monotonic()
        self._poller.request(self.view, self.filter, self.grouped, force)

    def on_unmount(self) -> None:
        if self._poller is not None:
            self._poller.close()
        gc.unfreeze()  # collectable again (a process that runs more than one app)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if (worker.group == "preview" and event.state == WorkerState.SUCCESS
                and worker.result[0] == self._preview_key):
            self._show_preview(worker.result[1])

    def _poll_done(self, snap: Snapshot | None, error: str | None) -> None:
        self._polling = False
        self.error = error
        if snap is not None:
            self.snapshot = snap
        delay = self.interval if error is None else max(self.interval, 2.0)
        fresh = snap is not None and not snap.reused
        if fresh:
            # A refresh that costs more CPU than the budget allows waits longer for the
            # next one (a drain of thousands of jobs a second makes every count bigger and
            # every row new): the monitor stays under REFRESH_SHARE of a core; the header
            # shows the interval it really refreshes at. The draw counted is the lesser of
            # the last two: a view's first draw (a key pressed, a resize) costs more, once.
            draw = min(self._draws)
            self.effective_interval = max(
                delay, math.ceil((snap.read_cpu + draw) / REFRESH_SHARE * 10 - 1e-9) / 10)
        else:  # nothing re-read (a cheap check), or nothing read
            self.effective_interval = delay
        # Tables too: this second's countdowns are drawn with the poll's result, in the
        # same screen update (rows are rebuilt only when their snapshot or second changed).
        started = time.thread_time()
        self.render_all()
        if fresh:  # what the draw cost, up to the screen's update (this thread's CPU)
            self.call_after_refresh(self._drawn, started)
        if self._again:
            self._again = False
            self.request_poll()
        elif self.live and self.effective_interval < 1.0:  # faster than the beat
            self._timer = self.set_timer(self.effective_interval, self._timed_poll)

    def _drawn(self, started: float) -> None:
        self._draws = (self._draws[1], time.thread_time() - started)

    def _timed_poll(self) -> None:
        self._timer = None
        if self.live and not self._modal_open():
            self.request_poll()

    def _modal_open(self) -> bool:
        return len(self.screen_stack) > 1

    def _schedule_beat(self) -> None:
        """Start the 1 Hz beat at the next whole second of the clock (plus BEAT_AFTER).
        One repeating timer: Textual makes a timer at some cost (a description, a look at
        its callback's signature), too much to make one every second."""
        if self._beat_timer is not None:
            self._beat_timer.stop()
        now = self.clock.now()
        delay = math.floor(now) + 1 + BEAT_AFTER - now
        self._beat_timer = self.set_timer(delay if delay > 0.05 else delay + 1,
                                          self._start_beats)

    def _start_beats(self) -> None:
        self._beat_timer = self.set_interval(1.0, self._beat)
        self._beat()

    def _beat(self) -> None:
        """Just after each whole second of the clock: poll when one is due (its result
        is drawn with this second's countdowns, in one screen update), else draw the
        countdowns and ages alone. Nothing is read while paused or under a modal screen,
        nor drawn while a poll of this second is on its way."""
        if (self.clock.now() - BEAT_AFTER) % 1.0 > 0.25:  # the clock moved away: align
            self._schedule_beat()
        if self._modal_open():
            return
        since = time.monotonic() - self._poll_started
        if (self.live and not self._polling
                and since >= max(1.0, self.effective_interval) - 0.2):
            self.request_poll()
        elif not (self._polling and since < 0.9):
            self.render_all()

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
        frozen_at = self._frozen_at(now)
        st = HeaderState(self.source.path, self.live, self.effective_interval,
                         self.source.read_only, self.beat)
        self._widget("#header", StatusHeader).show_state(self.snapshot, now, st, self.wide,
                                                         frozen_at)
        banner = self._widget("#banner", Static)
        blockers = self.snapshot.blockers if self.snapshot is not None else ()
        if self.error:
            text = Text("✗ database unavailable: ", "bold")
            text.append_text(literal(self.error, limit=300))
            text.append(" — showing the last data read; retrying…")
            banner.update(text)
        elif blockers:
            text = Text("✗ writes are blocked: the write lock is held by ", "bold")
            text.append_text(literal("; ".join(blockers), limit=300))
            text.append(" — resume it (kill -CONT) or end it")
            banner.update(text)
        banner.display = bool(self.error or blockers)
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
                for name in ("queues", "workers"):
                    self._widget(f"#side-{name}", JobTable).tick(now)
            self._render_status()
            return
        self._table_key = key
        self._render_table(now)
        if self._rich and self.snapshot is not None:
            self._render_side(now)
            self._want_preview()
        self._render_status()

    def _frozen_at(self, now: float) -> float | None:
        """The time to show the data at, when it is not ``now``: while paused, stale or
        unreadable, the last time the data was known current. Countdowns and warnings
        then stop there instead of running on into alarms the data does not support."""
        snap = self.snapshot
        if snap is None:
            return None
        if self.live and not self.error and \
                now - snap.checked_at <= stale_after(self.effective_interval):
            return None
        return min(now, snap.checked_at)

    def _render_table(self, now: float) -> None:
        v = self.shown
        table = self.table(v.name)
        col, rev = self.sort_by.get(v.layout(self.grouped), (None, False))
        columns = v.columns(self.grouped, self.wide)
        if col is not None and col < len(columns):  # the sort column says so in its header
            marked = f"{columns[col].label} {'▼' if rev else '▲'}"
            columns[col] = replace(columns[col], label=marked)
        table.set_columns(columns)
        snap = self._snapshot_for(v)
        if snap is None:
            return  # this view's rows have not been read yet: the poll is on its way
        rows = v.rows(snap, wide=self.wide, beat=self.beat)
        if col is not None:
            sort_rows(rows, col, rev)
        table.set_rows(rows, now)

    def _snapshot_for(self, v: View) -> Snapshot | None:
        """The last snapshot if it holds ``v``'s rows; any snapshot for a view without
        rows of its own (stats, workers and running jobs are in every one)."""
        snap = self.snapshot
        if snap is None or not v.own_rows:
            return snap
        if snap.view != v.name or (v.groups and snap.grouped != self.grouped):
            return None
        return snap

    def _want_preview(self) -> None:
        """Show the highlighted job below the table (rich layout only); read it again only
        when the highlight or the database changed."""
        if not self._rich:
            return
        row = self.table().current_row()
        job_id = None if row is None else row.job_id
        key = (job_id, None if self.snapshot is None else self.snapshot.version)
        if key == self._preview_key:
            return
        self._preview_key = key
        if job_id is None:
            self._show_preview(Text(""))
        else:
            self._load_preview(key)

    def _show_preview(self, text: Text) -> None:
        """Update the preview only when its text changed: a new text for a ``Static`` lays
        the whole screen out again (its height may change), and the preview is read again
        at every change in the database (every heartbeat)."""
        sig = (text.plain, tuple(text.spans))
        if sig != self._preview_sig:
            self._preview_sig = sig
            body = self._widget("#preview-body", Static)
            # A layout only when the new text's height differs: in a drain the highlighted
            # job changes at every read, and laying the screen out again cost 7-27 ms
            # each time, the text of the same height 0.1 ms (``bench/tui_cpu.py``).
            body.update(text, layout=False)
            width = body.content_region.width
            if not width or body.get_content_height(
                    body.size, body.size, width) != body.content_region.height:
                body.refresh(layout=True)

    @work(thread=True, exclusive=True, group="preview", exit_on_error=False,
          description="preview")
    def _load_preview(self, key: tuple) -> tuple[tuple, Text]:
        try:
            job, attempts = self.source.detail(key[0])
            return key, detail_text(job, attempts, self.clock.now(), key[0])
        except Unavailable as e:
            return key, literal(str(e), "bold red")

    def on_job_table_row_highlighted(self, event: JobTable.RowHighlighted) -> None:
        if event.table is self.table():
            self._want_preview()

    def _render_side(self, now: float) -> None:
        for v in (VIEWS["queues"], VIEWS["workers"]):
            table = self._widget(f"#side-{v.name}", JobTable)
            table.set_columns(v.columns(False, False))
            snap = self._snapshot_for(v)
            if snap is not None:
                table.set_rows(v.rows(snap, wide=False, beat=self.beat), now)

    def _render_status(self) -> None:
        t = Text(no_wrap=True, overflow="ellipsis")
        table = self.table()
        t.append(f"{table.row_count} row{'' if table.row_count == 1 else 's'}", "dim")
        if self.snapshot is not None and table.row_count >= ROW_LIMIT:
            t.append(f" (first {ROW_LIMIT}; filter to narrow)", "dim")
        if self.filter.group is not None:  # a dead group's jobs: say which group
            t.append("  group ", "dim")
            t.append_text(literal(f"{self.filter.kind}: {cut_middle(self.filter.group, 44)}",
                                  "bold"))
            t.append("  esc: all", "dim")
        elif not self.filter.empty:
            t.append("  filter ", "dim")
            t.append_text(literal(self.filter.text, "bold", limit=60))
        v = self.shown
        col, rev = self.sort_by.get(v.layout(self.grouped), (None, False))
        if col is not None:
            cols = v.columns(self.grouped, self.wide)
            if col < len(cols):
                t.append(f"  sorted by {cols[col].label} {'▼' if rev else '▲'}", "dim")
        if v.groups:
            t.append("  grouped by error (d: one row per job)" if self.grouped
                     else "  one row per job (d: group by error)", "dim")
        if self.message:
            t.append("  ")
            t.append_text(self.message)
        self._widget("#status", TextLine).show(t)

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
        layout = self.shown.layout(self.grouped)
        col, rev = self.sort_by.get(layout, (None, False))
        self.sort_by[layout] = (event.column_index,
                                not rev if col == event.column_index else False)
        self.render_all()

    def on_input_changed(self, event: Input.Changed) -> None:
        """Filter as you type: each change that parses is applied at once (a half-typed
        quote waits, saying why)."""
        if event.input.id != "filter" or not self._main.has_class("-filtering"):
            return
        if job_ref(event.value) is not None:
            self.say("enter opens that job")
            return
        try:
            filt = parse_filter(event.value)
        except FilterError as e:
            self.say(str(e), "dim")
            return
        self.message = Text()
        if filt != self.filter:
            self.filter = filt
            self.render_all()
            self.request_poll()

    async def on_event(self, event: events.Event) -> None:
        """While the filter box is open, keys go into it here, in the order they arrived.
        Left to Textual, a burst misorders: printable keys reach the box through its own
        queue while its bindings (backspace, arrows, enter) take effect only when the key
        comes back up unhandled, after the keys behind it. And a key typed after enter must
        reach the table, not the box."""
        if (isinstance(event, events.Key) and not event.is_forwarded
                and self._main.has_class("-filtering") and not self._modal_open()):
            await self._filter_key(event)
            return
        await super().on_event(event)

    async def _filter_key(self, event: events.Key) -> None:
        box = self._main.query_one("#filter", Input)
        if event.key == "escape":
            self._close_filter()
        elif event.key == "enter":
            self._submit_filter(box.value)
        elif event.is_printable and event.character:
            box.insert_text_at_cursor(event.character)
        elif bindings := box._bindings.key_to_bindings.get(event.key):
            await box.run_action(bindings[0].action)
        elif event.key in ("tab", "shift+tab", "ctrl+q", "ctrl+c"):
            await super().on_event(event)  # the app's own: focus moves, quitting

    def _submit_filter(self, value: str) -> None:
        job_id = job_ref(value)
        if job_id is not None:  # #123: open that job; the filter stays as it was
            self._close_filter()
            self.filter = self._filter_before
            self.render_all()
            self.request_poll()
            self.push_screen(DetailScreen(job_id, self.source, clock=self.clock,
                                          interval=self.interval, live=lambda: self.live))
            return
        try:
            self.filter = parse_filter(value)
        except FilterError as e:  # the box stays open to fix it; what was typed is not kept
            self.filter = self._filter_before
            self.render_all()
            self.request_poll()
            self.say(str(e), "bold red")
            return
        self._close_filter()
        self.render_all()
        self.request_poll()

    def _close_filter(self) -> None:
        self._main.remove_class("-filtering")
        self._main.set_focus(self.table(), scroll_visible=False)  # now: the next key is its

    # -- actions --------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in _WRITE_ACTIONS and self.source.read_only:
            return False  # hidden, not greyed out: a read-only monitor has no such keys
        if action in _VIEW_ACTIONS and not getattr(self.shown, _VIEW_ACTIONS[action]):
            return False  # not offered here: the key's next binding says where it acts
        if action == "pause" and isinstance(self.screen, DetailScreen):
            return True  # the detail screen is live too
        if action == "filter" and self._main.has_class("-filtering"):
            return False  # a / typed in the filter box is part of the filter
        if self._modal_open() and action in _MAIN_VIEW_ACTIONS:
            return False  # the main view's keys do nothing on the detail screen
        return True

    def action_view(self, view: str) -> None:
        self._main.query_one("#tabs", TabbedContent).active = view

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_filter(self) -> None:
        self._main.add_class("-filtering")
        box = self._main.query_one("#filter", Input)
        self._filter_before = self.filter
        box.value = self.filter.text
        box.cursor_position = len(box.value)
        # Focus now, not after the keys already queued: every key after the / belongs in
        # the box (a q must not quit).
        self._main.set_focus(box, scroll_visible=False)

    def action_clear_filter(self) -> None:
        box = self._main.query_one("#filter", Input)
        if box.has_focus:
            self._close_filter()
            return
        if self.table().marked:
            self.table().clear_marks()
            self.say("marks cleared")
            return
        if not self.filter.empty:
            self.filter = Filter()
            self.say("filter cleared")
            self.request_poll()

    def action_pause(self) -> None:
        self.live = not self.live
        self.say("live refresh resumed" if self.live else "paused: p resumes, r refreshes once")
        if self._modal_open():  # the status line is under the detail screen
            self.notify("live refresh resumed" if self.live else "paused: p resumes, r reloads",
                        markup=False, timeout=3)
        self.render_all()
        if self.live:
            self.request_poll()
        elif self._timer is not None:
            self._timer.stop()
            self._timer = None

    def action_refresh(self) -> None:
        self.request_poll(force=True)

    def action_sort(self, reverse: bool = False) -> None:
        """``s``: sort by the next column; after the last, back to the order as read
        (None). ``S``: reverse the order."""
        layout = self.shown.layout(self.grouped)
        n = len(self.shown.columns(self.grouped, self.wide))
        col, rev = self.sort_by.get(layout, (None, False))
        if reverse:
            self.sort_by[layout] = (col if col is not None else 0, not rev)
        elif col is not None and col + 1 >= n:
            self.sort_by.pop(layout, None)
            self.say("sorted as read (the view's own order)")
        else:
            self.sort_by[layout] = (0 if col is None else col + 1, rev)
        self.render_all()

    def action_sort_reverse(self) -> None:
        self.action_sort(reverse=True)

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
            self.push_screen(DetailScreen(row.job_id, self.source, clock=self.clock,
                                          interval=self.interval, live=lambda: self.live))
