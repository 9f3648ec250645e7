"""The job detail screen: payload, result, progress and every attempt with its full error.

It reads the job itself, through the app's ``Source``, in a thread worker of its own; the
widget is touched only on the event loop (``call_from_thread``). Every database string
is shown through ``literal`` (see ``views.cells``).
"""
from __future__ import annotations

import json
from collections.abc import Callable

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer, Static

from jobq_core import Attempt, Clock, Dependencies, Job, JobStatus, Outcome, Why
from jobq_core.presentation.display import attempts_text, checked, duration, job_badge, timestamp

from ..source import Source, Unavailable
from ..views.cells import BAD, DIM, badge, literal

_BAD_OUTCOMES = frozenset({Outcome.FAILED, Outcome.LEASE_EXPIRED})


class DetailScreen(Screen):
    """One job, live like the main view: at each refresh interval it re-reads the job when
    the database changed, and redraws a running job (its lease countdown) when it did not;
    nothing while ``live()`` is false (the monitor is paused), except on ``r``."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "back"),
        Binding("q", "app.pop_screen", "back", show=False),
        Binding("j,down", "scroll(1)", "down", show=False),
        Binding("k,up", "scroll(-1)", "up", show=False),
        Binding("pagedown", "page(1)", "page down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("g,home", "edge(-1)", "top", show=False),
        Binding("G,end", "edge(1)", "bottom", show=False),
        Binding("r", "reload", "reload"),
        Binding("p", "app.pause", "pause"),
    ]

    def __init__(self, job_id: int, source: Source, *, clock: Clock, interval: float,
                 live: Callable[[], bool]):
        super().__init__()
        self.job_id = job_id
        self.source = source
        self.clock = clock
        self.interval = interval
        self.live = live
        self.version: int | None = None  # the source's version at the last read
        self.job: Job | None = None
        self.attempts: list[Attempt] = []
        self.deps: Dependencies | None = None
        self.why: Why | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="detail-scroll"):
            yield Static(Text(f"loading job {self.job_id}…"), id="detail-body")
        yield Footer()

    def on_mount(self) -> None:
        self.set_interval(self.interval, self._tick)
        self.load()

    def _tick(self) -> None:
        if self.live():
            self.load(force=False)

    def action_reload(self) -> None:
        self.load()

    def action_scroll(self, lines: int) -> None:
        self.query_one("#detail-scroll", VerticalScroll).scroll_relative(y=lines, animate=False)

    def action_page(self, pages: int) -> None:
        scroll = self.query_one("#detail-scroll", VerticalScroll)
        scroll.scroll_relative(y=pages * max(1, scroll.size.height - 1), animate=False)

    def action_edge(self, end: int) -> None:
        """``g`` the top, ``G`` the bottom (the last attempt's traceback), as in lists."""
        scroll = self.query_one("#detail-scroll", VerticalScroll)
        if end > 0:
            scroll.scroll_end(animate=False)
        else:
            scroll.scroll_home(animate=False)

    @work(thread=True, exclusive=True, group="detail")
    def load(self, force: bool = True) -> None:
        """Read the job again (unless ``force`` is off and nothing changed: then only a
        running job is redrawn, for its countdown) and show it."""
        try:
            version = self.source.version()
            if force or version != self.version:
                job, attempts = self.source.detail(self.job_id)
                self.deps, self.why = self.source.links(self.job_id)
                self.version, self.job, self.attempts = version, job, attempts
            elif self.job is None or self.job.status != JobStatus.RUNNING:
                return  # nothing on the screen would change
            body = detail_text(self.job, self.attempts, self.clock.now(), self.job_id,
                               deps=self.deps, why=self.why)
        except Unavailable as e:
            self.version = None  # read again once the database is back
            body = Text("database unavailable: ", "bold red")
            body.append_text(literal(str(e), limit=300))
        except Exception as e:  # a bug or a row no reader expected: the monitor stays up
            self.version = None
            body = Text(f"cannot show job {self.job_id}: ", "bold red")
            body.append_text(literal(f"{type(e).__name__}: {e}", limit=300))
        self.app.call_from_thread(self._show, body)

    def _show(self, body: Text) -> None:
        try:
            self.query_one("#detail-body", Static).update(body)
        except NoMatches:  # closed while the read was on its way
            pass


def detail_text(job: Job | None, attempts: list[Attempt], now: float, job_id: int, *,
                deps: Dependencies | None = None, why: Why | None = None) -> Text:
    """The whole detail of one job as one scrollable Text (also the rich layout's preview,
    which leaves out ``deps`` and ``why``: two more reads per highlighted row)."""
    t = Text()
    if job is None:
        t.append(f"job {job_id} no longer exists (pruned?)", BAD)
        return t
    job, problems = checked(job)
    checked_attempts = [checked(a) for a in attempts]
    attempts = [a for a, _ in checked_attempts]
    problems += tuple(f"attempt {a.attempt}: {p}" for a, ps in checked_attempts for p in ps)
    t.append(f"job {job.id}  ", "bold")
    t.append_text(badge(job_badge(job, now)))
    t.append("\n")
    if problems:  # another program wrote values jobq cannot use: show them as they are
        t.append("⚠ invalid values (shown as - below):\n", BAD)
        for p in problems:
            t.append("  ")
            t.append_text(literal(p, limit=200))
            t.append("\n")
    fields = [
        ("kind", job.kind), ("queue", job.queue), ("priority", job.priority),
        ("attempts", attempts_text(job, "/")), ("worker", job.worker),
        ("created", timestamp(job.created_at)), ("run at", timestamp(job.run_at)),
        ("started", timestamp(job.started_at)), ("finished", timestamp(job.finished_at)),
        ("lease until", timestamp(job.lease_until)),
        ("unique key", job.unique_key),
    ]
    if job.key is not None:  # a concurrency key (see why: key_held)
        fields.append(("key", job.key))
    if job.cancel_requested:
        fields.append(("cancel", "requested; the worker stops the job at its next heartbeat"))
    for name, value in fields:
        t.append(f"{name:>12}  ", DIM)
        t.append_text(literal("-" if value is None else value, limit=200))
        t.append("\n")
    if why is not None:
        t.append(f"{'why':>12}  ", DIM)
        t.append(f"{why.reason}: ", "bold")
        t.append_text(literal(why.message, limit=300))
        t.append("\n")
    for name, links in (("waits on", deps.waits_on if deps else ()),
                        ("waited by", deps.waited_by if deps else ())):
        if links:
            t.append(f"{name:>12}  ", DIM)
            for i, link in enumerate(links[:8]):
                t.append(", " if i else "")
                t.append(f"{link.job_id} ")
                t.append_text(literal(link.kind, limit=40))
                t.append(f" ({link.status})", BAD if link.status in ("dead", "cancelled") else "")
            if len(links) > 8:
                t.append(f", and {len(links) - 8} more", DIM)
            t.append("\n")
    if job.progress is not None or job.progress_message:
        t.append(f"{'progress':>12}  ", DIM)
        if job.progress is not None:
            t.append(f"{job.progress * 100:.0f}%  ")
        t.append_text(literal(job.progress_message or "", limit=500))
        t.append("\n")
    _section(t, "payload", _json(job.payload))
    if job.result is not None:
        _section(t, "result", _json(job.result))
    t.append("\nattempts\n", "bold underline")
    if not attempts:
        t.append("  none yet\n", DIM)
    for a in attempts:
        took = "" if a.started_at is None or a.ended_at is None else \
            f" in {duration(a.ended_at - a.started_at)}"
        t.append(f"  #{a.attempt}  ", "bold")
        t.append_text(literal(a.outcome, BAD if a.outcome in _BAD_OUTCOMES else ""))
        t.append(f"{took}  worker ", DIM)
        t.append_text(literal(a.worker or "-", limit=80))
        t.append(f"\n      {_span(a.started_at, a.ended_at)}\n", DIM)
        if a.error:
            t.append_text(literal(a.error, multiline=True, limit=20000))
            t.append("\n")
    return t


def _span(start: float | None, end: float | None) -> str:
    """``2026-12-02 04:43:45 → 04:43:46 UTC``: the end's date only when it is another
    day (an attempt's line then fits 80 columns)."""
    first, last = timestamp(start), timestamp(end)
    if first.endswith(" UTC") and last.endswith(" UTC"):
        first = first.removesuffix(" UTC")
        if last[:10] == first[:10]:
            last = last[11:]
    return f"{first} → {last}"


def _json(value: object) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
    except (TypeError, ValueError):
        return repr(value)


def _section(t: Text, title: str, body: str) -> None:
    t.append(f"\n{title}\n", "bold underline")
    t.append_text(literal(body, multiline=True, limit=20000))
    t.append("\n")
