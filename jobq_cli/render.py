"""Jobs, stats and workers as JSON for scripts and as Rich tables for people.

Every string from the database goes through ``cell`` (``textsafe.clean`` into a
``rich.text.Text``): it is never parsed as markup and carries no control characters.
The JSON keys here are the documented, stable interface of ``--json``.
"""
from __future__ import annotations

import json
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from jobq_core import (
    DbHealth,
    DEFAULT_BEAT, Attempt, Dependencies, Job, JobStatus, Link, QueueLimits, Stats, WorkerInfo, WorkerState,
)
from jobq_core.presentation.display import (
    WORKER_BADGES, attempts_text, checked, duration, job_badge, masked_url, timestamp, tries,
)
from jobq_core.common.error_groups import error_line
from jobq_core.common.textsafe import clean

from .tables import NEVER_DROPPED, Col, print_table

span = duration  # the name demo.py and run.py know it by


def console() -> Console:
    return Console(highlight=False, markup=False, emoji=False)


def cell(value: Any, style: str = "", *, limit: int | None = 60, multiline: bool = False) -> Text:
    return Text(clean(value, limit=limit, multiline=multiline), style=style)


# -- JSON -----------------------------------------------------------------------------------

def links_json(deps: Dependencies) -> dict[str, Any]:
    """``jobq show --json``'s dependency keys."""
    def one(link: Link) -> dict[str, Any]:
        return {"id": link.job_id, "kind": link.kind, "status": str(link.status),
                "allow_failed": link.allow_failed}

    return {"waits_on": [one(x) for x in deps.waits_on],
            "waited_by": [one(x) for x in deps.waited_by]}


def links_text(links: tuple[Link, ...], most: int = 8) -> Text:
    """``12 fetch (running), 13 parse (pending)``: ids whole, kinds shown literally."""
    out = Text()
    for i, link in enumerate(links[:most]):
        if i:
            out.append(", ")
        out.append(f"{link.job_id} ")
        out.append(cell(link.kind, limit=40))
        out.append(f" ({link.status})")
    if len(links) > most:
        out.append(f", and {len(links) - most} more")
    return out


def job_json(job: Job) -> dict[str, Any]:
    return {
        "id": job.id, "kind": job.kind, "queue": job.queue, "status": str(job.status),
        "priority": job.priority, "attempts": job.attempts, "max_attempts": job.max_attempts,
        "payload": job.payload, "result": job.result, "error": job.error,
        "progress": job.progress, "progress_message": job.progress_message,
        "cancel_requested": job.cancel_requested, "unique_key": job.unique_key,
        "key": job.key, "worker": job.worker, "run_at": job.run_at, "lease_until": job.lease_until,
        "heartbeat_at": job.heartbeat_at, "created_at": job.created_at,
        "started_at": job.started_at, "finished_at": job.finished_at,
    }


def attempt_json(a: Attempt) -> dict[str, Any]:
    return {"attempt": a.attempt, "worker": a.worker, "started_at": a.started_at,
            "ended_at": a.ended_at, "outcome": str(a.outcome), "error": a.error}


def stats_json(s: Stats) -> dict[str, Any]:
    return {
        "now": s.now, "window": s.window, "pending": s.pending, "scheduled": s.scheduled,
        "retrying": s.retrying, "running": s.running, "dead": s.dead,
        "succeeded_recent": s.succeeded_recent, "dead_recent": s.dead_recent,
        "cancelled_recent": s.cancelled_recent, "expired_leases": s.expired_leases,
        "oldest_pending_age": s.oldest_pending_age, "waiting": s.waiting,
        "queues": {
            name: {"pending": q.pending, "running": q.running, "dead": q.dead,
                   "waiting": q.waiting,
                   "oldest_pending_age": None if q.oldest_pending_at is None
                   else max(0.0, s.now - q.oldest_pending_at), "held": q.held,
                   "paused": q.paused, "concurrency": q.concurrency,
                   "rate": None if q.rate is None else str(q.rate),
                   "key_concurrency": q.key_concurrency, "ordered": q.ordered,
                   "keys_busy": q.keys_busy,
                   "declared": None if q.declared is None else limits_json(q.declared),
                   "drift": q.drift}
            for name, q in s.queues.items()
        },
    }


def limits_json(limits: QueueLimits) -> dict[str, Any]:
    """A set of limits (as declared in code): ``{concurrency, rate, key_concurrency,
    ordered}``."""
    return {"concurrency": limits.concurrency,
            "rate": None if limits.rate is None else str(limits.rate),
            "key_concurrency": limits.key_concurrency, "ordered": limits.ordered}


def worker_json(w: WorkerInfo, now: float, leader: str | None = None) -> dict[str, Any]:
    return {"id": w.id, "leader": w.id == leader, "host": w.host, "pid": w.pid,
            "queues": None if w.queues is None else list(w.queues),
            "concurrency": w.concurrency, "busy": w.busy, "started_at": w.started_at,
            "last_seen": w.last_seen,
            "last_seen_ago": max(0.0, now - checked(w)[0].last_seen),
            "state": str(worker_state(w, now)), "beat_interval": w.beat_interval,
            "lease": w.lease, "pool": w.pool,
            "children": None if w.children is None else
            [{"pid": pid, "state": state, "job": job} for pid, state, job in w.children]}


# -- people ---------------------------------------------------------------------------------

def ago(t: float | None, now: float) -> str:
    """``42s ago``, ``in 3m05s``: whole seconds (a moment, not a measurement)."""
    if t is None:
        return "-"
    d = now - t
    return f"in {duration(int(-d))}" if d < 0 else f"{duration(int(d))} ago"


def status_text(job: Job, now: float) -> Text:
    """The job's state as the monitor shows it: glyph, word and colour."""
    badge = job_badge(job, now)
    return Text(badge.label, style=badge.style)


def health_json(h: DbHealth) -> dict[str, Any]:
    """``jobq stats --json``'s ``database``: what ``Queue.db_health`` read, and its
    warnings."""
    out: dict[str, Any] = {"store": h.store, "warnings": h.warnings()}
    if h.store == "sqlite":
        out.update(wal_bytes=h.wal_bytes, wal_starved=h.wal_starved(), free_pages=h.free_pages,
                   page_count=h.page_count, page_size=h.page_size)
        return out
    out.update(autovacuum=h.autovacuum, oldest_transaction_seconds=h.oldest_transaction,
               vacuum_held_back=h.held_back(), tables={
                   name: {"dead_rows": t.dead_rows, "live_rows": t.live_rows,
                          "last_vacuum": t.last_vacuum, "last_autovacuum": t.last_autovacuum,
                          "autovacuum": t.autovacuum, "can_vacuum": t.can_vacuum,
                          "vacuum_due": t.vacuum_due()}
                   for name, t in h.tables.items()})
    return out


def print_stats(s: Stats, db: str, health: DbHealth | None = None) -> None:
    """The counts, then a table of queues fitted to the terminal (names whole), then what
    is wrong with jobq's tables, if anything."""
    console().print(stats_view(s, db))
    if s.queues:
        rows: list[list[Text | str]] = [
            [cell(name, limit=None), str(q.pending), str(q.running), str(q.dead),
             "-" if q.oldest_pending_at is None
             else duration(max(0.0, s.now - q.oldest_pending_at))]
            for name, q in s.queues.items()]
        print_table(console(), STATS_QUEUE_COLS, rows)
    for warning in health.warnings() if health is not None else ():
        console().print(Text(f"! {warning}", style="yellow"))


STATS_QUEUE_COLS = (
    Col("QUEUE", NEVER_DROPPED, fixed=True),  # the name pause, resume and --queue take
    Col("PENDING", 95, fixed=True, justify="right"),
    Col("RUNNING", 90, fixed=True, justify="right"),
    Col("DEAD", 85, fixed=True, justify="right"),
    Col("OLDEST WAIT", 80, fixed=True, justify="right"),
)


def stats_view(s: Stats, db: str) -> Group:
    """The counts above the queues' table."""
    head = Table.grid(padding=(0, 2))
    for _ in range(4):
        head.add_column()
    lag = "-" if s.oldest_pending_age is None else duration(s.oldest_pending_age)
    head.add_row("pending", str(s.pending), "running", str(s.running))
    head.add_row("  scheduled", str(s.scheduled), "dead", Text(str(s.dead), style="red" if s.dead else ""))
    head.add_row("  retrying", str(s.retrying), "expired leases", str(s.expired_leases))
    head.add_row("oldest ready job waits", lag, "waiting (after)", str(s.waiting))
    window = duration(s.window)
    head.add_row(f"last {window}: succeeded", str(s.succeeded_recent),
                 "dead / cancelled", f"{s.dead_recent} / {s.cancelled_recent}")
    return Group(Text(f"jobq · {clean(masked_url(db))}", style="bold"), head, Text(""))


JOB_COLS = (
    Col("ID", NEVER_DROPPED, fixed=True, justify="right"),
    Col("STATUS", NEVER_DROPPED, fixed=True),
    Col("KIND", 80, least=16, want=32, shrink=4),
    Col("WHEN", 70, fixed=True),
    Col("ERROR", 60, least=24, want=40, shrink=3, middle=True),
    Col("TRIES", 50, fixed=True, justify="right"),
    # A queue is a name to act on (--queue, pause): cut last, and never below 8 ("defau…"
    # named nothing), while the free text to its left still has room to give.
    Col("QUEUE", 40, least=8, want=14, shrink=5),
    Col("WORKER", 30, least=12, want=16, shrink=1, middle=True),  # its state at the end
    Col("PRI", 20, fixed=True, justify="right"),
)


def print_jobs(jobs: list[Job], now: float, workers: dict[str, WorkerState]) -> None:
    """Jobs as a table fitted to the terminal: ids and statuses whole, the least useful
    columns dropped or cut first (``tables``). A running job's worker is followed by its
    state when that is late or lost (``workers``: each registered worker's state)."""
    jobs = [checked(j)[0] for j in jobs]
    rows: list[list[Text | str]] = [
        [str(j.id), status_text(j, now), cell(j.kind, limit=60), _when(j, now),
         # a succeeded job's error is an earlier attempt's: its history (jobq show) has it
         cell("" if j.status == JobStatus.SUCCEEDED else error_line(j.error), "red",
              limit=200), tries(j),
         cell(j.queue, limit=40), _worker(j, workers), str(j.priority)]
        for j in jobs]
    print_table(console(), JOB_COLS, rows)


def _worker(job: Job, workers: dict[str, WorkerState]) -> Text:
    """``vm-4242-ab12 ✗ lost``: the worker of a running job, and its state unless ok (a
    worker no longer registered was forgotten: lost)."""
    name = cell(job.worker or "", limit=60)
    if job.status != JobStatus.RUNNING or not job.worker:
        return name
    state = workers.get(job.worker, WorkerState.LOST)
    if state == WorkerState.OK:
        return name
    badge = WORKER_BADGES[state]
    return Text.assemble(name, " ", (badge.label, badge.style))


def _when(j: Job, now: float) -> str:
    if j.status == JobStatus.PENDING:
        return "ready" if j.run_at <= now else f"in {duration(j.run_at - now)}"
    if j.status == JobStatus.RUNNING:
        return f"for {duration(now - (j.started_at or now))}"
    return ago(j.finished_at, now)


def job_view(job: Job, attempts: list[Attempt], now: float,
             deps: Dependencies | None = None) -> Group:
    job, problems = checked(job)
    checked_attempts = [checked(a) for a in attempts]
    attempts = [a for a, _ in checked_attempts]
    problems += tuple(f"attempt {a.attempt}: {p}" for a, ps in checked_attempts for p in ps)
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    rows: list[tuple[str, Text | str]] = [
        ("id", str(job.id)), ("kind", cell(job.kind, limit=None)),
        ("queue", cell(job.queue, limit=None)), ("status", status_text(job, now)),
        ("priority", str(job.priority)), ("attempts", attempts_text(job)),
        ("created", _stamp(job.created_at, now)), ("run at", _stamp(job.run_at, now)),
    ]
    if job.started_at is not None:
        rows.append(("started", _stamp(job.started_at, now)))
    if job.status == JobStatus.RUNNING:
        rows += [("worker", cell(job.worker, limit=None)),
                 ("lease until", _stamp(job.lease_until, now))]
        if job.progress is not None or job.progress_message:
            pct = "" if job.progress is None else f"{job.progress:.0%} "
            rows.append(("progress", Text(pct) + cell(job.progress_message or "", limit=200)))
        if job.cancel_requested:
            rows.append(("cancel", Text("requested", style="magenta")))
    if job.finished_at is not None:
        rows.append(("finished", _stamp(job.finished_at, now)))
    if job.unique_key is not None:
        rows.append(("unique key", cell(job.unique_key, limit=None)))
    if job.key is not None:
        rows.append(("key", cell(job.key, limit=None)))
    if deps is not None and deps.waits_on:
        rows.append(("waits on", links_text(deps.waits_on)))
    if deps is not None and deps.waited_by:
        rows.append(("waited on by", links_text(deps.waited_by)))
    for k, v in rows:
        grid.add_row(k, v)
    if problems:  # another program wrote values jobq cannot use: shown as they are
        grid.add_row(Text("invalid", style="bold red"),
                     cell("; ".join(problems), "red", limit=2000, multiline=True))
    parts: list[Any] = [grid, Text("payload", style="bold"), _json_block(job.payload)]
    if job.result is not None or job.status == JobStatus.SUCCEEDED:
        parts += [Text("result", style="bold"), _json_block(job.result)]
    if job.error:
        parts += [Text("last error", style="bold"), cell(job.error, "red", limit=20000,
                                                          multiline=True)]
    if attempts:
        parts.append(Text("attempts", style="bold"))
    return Group(*parts)


ATTEMPT_COLS = (
    Col("#", NEVER_DROPPED, fixed=True, justify="right"),
    Col("OUTCOME", NEVER_DROPPED, fixed=True),
    Col("STARTED", 80, fixed=True),
    Col("TOOK", 70, fixed=True),
    Col("ERROR", 60, least=16, want=40, shrink=1, middle=True),
    Col("WORKER", 50, least=8, want=16, shrink=2),
)


def print_attempts(attempts: list[Attempt], now: float) -> None:
    attempts = [checked(a)[0] for a in attempts]
    rows: list[list[Text | str]] = []
    for a in attempts:
        took = "-" if a.started_at is None else duration((a.ended_at or now) - a.started_at)
        rows.append([str(a.attempt), str(a.outcome), ago(a.started_at, now), took,
                     cell(error_line(a.error), "red", limit=200),
                     cell(a.worker or "", limit=60)])
    print_table(console(), ATTEMPT_COLS, rows)


def _stamp(t: float | None, now: float) -> str:
    return "-" if t is None else f"{timestamp(t)} ({ago(t, now)})"


def _json_block(value: Any) -> Text:
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    return cell(text, limit=20000, multiline=True)


WORKER_COLS = (
    Col("WORKER", NEVER_DROPPED, fixed=True),
    Col("STATE", NEVER_DROPPED, fixed=True),
    Col("LAST SEEN", 90, fixed=True),
    Col("BUSY", 85, fixed=True, justify="right"),
    Col("HOST", 50, least=8, want=20, shrink=2),
    Col("PID", 45, fixed=True, justify="right"),
    Col("QUEUES", 40, least=8, want=20, shrink=1),
    Col("STARTED", 30, fixed=True),
    Col("ROLE", 88, fixed=True),
)


def worker_state(w: WorkerInfo, now: float) -> WorkerState:
    """Judged by the heartbeat interval the worker recorded (``DEFAULT_BEAT`` for one
    that recorded none)."""
    return checked(w)[0].state(now, DEFAULT_BEAT)


def worker_states(workers: list[WorkerInfo], now: float) -> dict[str, WorkerState]:
    return {w.id: worker_state(w, now) for w in workers}


def print_workers(workers: list[WorkerInfo], now: float, held: dict[str, int],
                  leader: str | None = None) -> None:
    """``held``: how many running jobs carry each worker's name. A lost worker's BUSY is
    the most it is known to hold (its last beat's count, or more jobs still under its
    name), marked stale: nobody is counting any more. ``leader``: the worker that runs
    maintenance (its ROLE says ``leader``)."""
    workers = [checked(w)[0] for w in workers]
    rows: list[list[Text | str]] = []
    for w in workers:
        queues = "*" if w.queues is None else ",".join(w.queues)
        state = w.state(now, DEFAULT_BEAT)
        b = WORKER_BADGES[state]
        busy: Text | str = f"{w.busy}/{w.concurrency}"
        if state == WorkerState.LOST:
            busy = Text(f"{max(w.busy, held.get(w.id, 0))}/{w.concurrency} stale", "dim")
        rows.append([cell(w.id, limit=None), Text(b.label, style=b.style),
                     ago(w.last_seen, now), busy,
                     cell(w.host, limit=60), str(w.pid), cell(queues, limit=60),
                     ago(w.started_at, now),
                     Text("leader", "bold") if w.id == leader else "-"])
    print_table(console(), WORKER_COLS, rows)
