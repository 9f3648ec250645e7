"""What each page and its JSON twin read and show: plain functions of the queue, no HTTP.

The rows come from the monitor's view model (``jobq_core.presentation.views``): each view
page is ``View.rows`` of a snapshot ``reading.take`` read, so a page and ``jobq-tui`` show
the same rows for the same database. The JSON twins say what ``jobq ... --json`` says
(``jobq_cli.render``, ``jobq_cli.controls``).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jobq_cli.controls import queue_json, schedule_json
from jobq_cli.render import attempt_json, job_json, links_json, stats_json, worker_json
from jobq_core import (
    DEFAULT_BEAT, Attempt, Dependencies, ErrorGroup, Job, JobNotFound, JobStatus, Queue, Stats,
    Why,
)
from jobq_core.presentation.display import checked, job_badge, limits_text
from jobq_core.presentation.views import ROW_LIMIT, VIEWS, Column, Row, View
from jobq_core.presentation.views.filters import Filter, FilterError, group_filter, parse_filter
from jobq_core.presentation.views.reading import take
from jobq_core.presentation.views.snapshot import Snapshot

# path -> the view it shows, in the tab order of the monitor; then the pages of their own
VIEW_PAGES = {"running": "running", "queues": "queues", "workers": "workers",
              "retries": "retries", "dead": "dead", "all": "all", "schedules": "schedules"}
TABS = [(path, VIEWS[name].title) for path, name in VIEW_PAGES.items()] + [("keys", "Keys")]
LIVE_EVERY = {"running": 1.0, "workers": 1.0}  # pages whose cells move each second


@dataclass
class ViewPage:
    """One view page as read: what the template and the JSON twin need."""

    view: View
    filt: Filter
    grouped: bool
    snap: Snapshot
    rows: list[Row]
    columns: list[Column]
    error: str = ""  # the filter could not be read (then every row is shown)
    extra: dict[str, Any] = field(default_factory=dict)


def parse(text: str) -> tuple[Filter, str]:
    """The filter in ``text``, or no filter and why (one line)."""
    try:
        return parse_filter(text), ""
    except FilterError as e:
        return Filter(), str(e)


def view_page(q: Queue, name: str, text: str, *, jobs: bool = False,
              payloads: bool = False) -> ViewPage:
    """``name``'s rows for the filter ``text`` (``jobs``: one row per dead job instead of
    error groups; ``payloads``: its jobs read with their payloads and results, for the
    JSON twin)."""
    view = VIEWS[name]
    filt, error = parse(text)
    grouped = view.groups and not jobs
    snap = take(WithPayloads(q) if payloads else q, view, filt, grouped=grouped,
                now=q.clock.now())
    rows = view.rows(snap, wide=True, beat=DEFAULT_BEAT)
    return ViewPage(view, filt, grouped, snap, rows, view.columns(grouped, True), error)


def view_json(page: ViewPage) -> Any:
    """The JSON twin of a view page: what ``jobq`` says with ``--json`` for those rows
    (jobs with their payloads, as ``jobq list --json``: the page read with ``payloads``),
    in the page's order."""
    now = page.snap.read_at
    name = page.view.name
    if name == "queues":
        return [queue_json(n, qs, now) for n, qs in page.snap.stats.queues.items()
                if page.filt.names(n, None) and page.filt.matches(n)]
    if name == "workers":
        shown = {r.key for r in page.rows}
        return [worker_json(w, now) for w in page.snap.workers if w.id in shown]
    if name == "schedules":
        return [schedule_json(s, now) for s in page.snap.rows]
    if name == "dead" and page.grouped:
        return [group_json(g) for g in page.snap.rows]
    read = {j.id: j for j in (*page.snap.rows, *page.snap.running) if isinstance(j, Job)}
    return [job_json(read[r.job_id]) for r in page.rows if r.job_id in read]


class WithPayloads:
    """A queue whose listings read payloads and results: the JSON twin's one read serves
    both its rows and its jobs. Listing the page's jobs again with their payloads, as
    the twin once did, ran the page's query twice: a search that matches nothing in
    1,000,000 SQLite jobs took 2.8 s on /api/all against 1.1 s on /all; read once, 1.4 s
    against 1.3 s (``bench/web_scale.py``)."""

    def __init__(self, q: Queue):
        self._q = q

    def list(self, *args: Any, **kwargs: Any) -> Any:
        return self._q.list(*args, **{**kwargs, "payloads": True})

    def dead_groups(self, *args: Any, **kwargs: Any) -> Any:
        return self._q.dead_groups(*args, **kwargs)

    def holds(self, *args: Any, **kwargs: Any) -> Any:
        return self._q.holds(*args, **kwargs)

    def schedules(self, *args: Any, **kwargs: Any) -> Any:
        return self._q.schedules(*args, **kwargs)

    def stats(self, *args: Any, **kwargs: Any) -> Any:
        return self._q.stats(*args, **kwargs)

    def workers(self, *args: Any, **kwargs: Any) -> Any:
        return self._q.workers(*args, **kwargs)

    def leader(self) -> Any:
        return self._q.leader()

    @property
    def frozen(self) -> bool:
        return self._q.frozen


def group_json(g: ErrorGroup) -> dict[str, Any]:
    return {"kind": g.kind, "line": g.line, "count": g.count,
            "last_finished_at": g.last_finished_at, "last_id": g.last_id,
            "queues": list(g.queues), "match": g.match, "key": g.key,
            "filter": group_filter(g).text}


def stats(q: Queue) -> Stats:
    return q.stats(window=3600.0)


def header(s: Stats) -> list[tuple[str, int]]:
    """The counts across the top of every page."""
    return [("pending", s.pending), ("running", s.running), ("retrying", s.retrying),
            ("scheduled", s.scheduled), ("dead", s.dead), ("waiting", s.waiting),
            ("done 1h", s.succeeded_recent)]


# -- one job ------------------------------------------------------------------------------

@dataclass
class JobPage:
    job: Job
    attempts: list[Attempt]
    deps: Dependencies
    why: Why | None
    now: float
    bad: tuple[str, ...]  # fields another program wrote that jobq cannot read


def job_page(q: Queue, job_id: int) -> JobPage | None:
    job = q.get(job_id)
    if job is None:
        return None
    shown, bad = checked(job)
    attempts = [checked(a)[0] for a in q.attempts(job_id)]
    deps = q.dependencies(job_id)
    try:
        why: Why | None = q.why(job_id)
    except JobNotFound:
        why = None
    return JobPage(shown, attempts, deps, why, q.clock.now(), bad)


def job_page_json(p: JobPage) -> dict[str, Any]:
    """As ``jobq show --json``, with ``why`` (``jobq why --json``) and the trace id."""
    why = None if p.why is None else {"reason": p.why.reason, "message": p.why.message,
                                      "details": p.why.details}
    return {**job_json(p.job), **links_json(p.deps),
            "history": [attempt_json(a) for a in p.attempts], "why": why,
            "trace_context": p.job.trace_context}


def job_state(p: JobPage) -> str:
    return job_badge(p.job, p.now).label


def can_retry(job: Job) -> bool:
    return job.status in (JobStatus.DEAD, JobStatus.CANCELLED)


def can_cancel(job: Job) -> bool:
    return job.status in (JobStatus.PENDING, JobStatus.WAITING, JobStatus.RUNNING) and not (
        job.cancel_requested)


# -- keys ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class KeyRow:
    queue: str
    key: str
    running: int
    pending: int
    limit: str


def keys_page(q: Queue) -> tuple[list[KeyRow], Stats]:
    """Concurrency keys with running or ready jobs (of the first ``ROW_LIMIT`` of each),
    with their queue's key limit: what holds a keyed job back."""
    s = q.stats(window=1.0)
    counts: dict[tuple[str, str], list[int]] = {}
    for status, slot in (("running", 0), ("pending", 1)):
        for j in q.list(status, limit=ROW_LIMIT, payloads=False):
            if j.key is not None:
                counts.setdefault((j.queue, j.key), [0, 0])[slot] += 1
    rows = []
    for (queue, key), (running, pending) in sorted(counts.items()):
        qs = s.queues.get(queue)
        limit = "-" if qs is None else (limits_text(qs) or "-")
        rows.append(KeyRow(queue, key, running, pending, limit))
    return rows, s


def keys_json(rows: list[KeyRow]) -> list[dict[str, Any]]:
    return [{"queue": r.queue, "key": r.key, "running": r.running, "pending": r.pending,
             "limits": r.limit} for r in rows]


Reader = Callable[[Queue], Any]
