"""Jobs, stats and workers as JSON for scripts and as Rich tables for people.

Every string from the database goes through ``cell`` (``textsafe.clean`` into a
``rich.text.Text``): it is never parsed as markup and carries no control characters.
The JSON keys here are the documented, stable interface of ``--json``.
"""
from __future__ import annotations

import json
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from jobq_core import Attempt, Job, JobStatus, Stats, WorkerInfo
from jobq_core.display import checked, duration, job_badge, timestamp
from jobq_core.error_groups import first_line
from jobq_core.textsafe import clean

span = duration  # the name demo.py and run.py know it by


def console() -> Console:
    return Console(highlight=False, markup=False, emoji=False)


def cell(value: Any, style: str = "", *, limit: int | None = 60, multiline: bool = False) -> Text:
    return Text(clean(value, limit=limit, multiline=multiline), style=style)


# -- JSON -----------------------------------------------------------------------------------

def job_json(job: Job) -> dict[str, Any]:
    return {
        "id": job.id, "kind": job.kind, "queue": job.queue, "status": str(job.status),
        "priority": job.priority, "attempts": job.attempts, "max_attempts": job.max_attempts,
        "payload": job.payload, "result": job.result, "error": job.error,
        "progress": job.progress, "progress_message": job.progress_message,
        "cancel_requested": job.cancel_requested, "unique_key": job.unique_key,
        "worker": job.worker, "run_at": job.run_at, "lease_until": job.lease_until,
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
        "oldest_pending_age": s.oldest_pending_age,
        "queues": {
            name: {"pending": q.pending, "running": q.running, "dead": q.dead,
                   "oldest_pending_age": None if q.oldest_pending_at is None
                   else max(0.0, s.now - q.oldest_pending_at)}
            for name, q in s.queues.items()
        },
    }


def worker_json(w: WorkerInfo, now: float) -> dict[str, Any]:
    return {"id": w.id, "host": w.host, "pid": w.pid,
            "queues": None if w.queues is None else list(w.queues),
            "concurrency": w.concurrency, "busy": w.busy, "started_at": w.started_at,
            "last_seen": w.last_seen,
            "last_seen_ago": max(0.0, now - checked(w)[0].last_seen)}


# -- people ---------------------------------------------------------------------------------

def ago(t: float | None, now: float) -> str:
    if t is None:
        return "-"
    d = now - t
    return f"in {duration(-d)}" if d < 0 else f"{duration(d)} ago"


def status_text(job: Job, now: float) -> Text:
    """The job's state as the monitor shows it: glyph, word and colour."""
    badge = job_badge(job, now)
    return Text(badge.label, style=badge.style)


def stats_view(s: Stats, db: str) -> Group:
    head = Table.grid(padding=(0, 2))
    for _ in range(4):
        head.add_column()
    lag = "-" if s.oldest_pending_age is None else duration(s.oldest_pending_age)
    head.add_row("pending", str(s.pending), "running", str(s.running))
    head.add_row("  scheduled", str(s.scheduled), "dead", Text(str(s.dead), style="red" if s.dead else ""))
    head.add_row("  retrying", str(s.retrying), "expired leases", str(s.expired_leases))
    head.add_row("oldest ready job waits", lag, "", "")
    window = duration(s.window)
    head.add_row(f"last {window}: succeeded", str(s.succeeded_recent),
                 "dead / cancelled", f"{s.dead_recent} / {s.cancelled_recent}")
    queues = Table(box=box.SIMPLE_HEAD, title_justify="left")
    for col in ("QUEUE", "PENDING", "RUNNING", "DEAD", "OLDEST WAIT"):
        queues.add_column(col, justify="left" if col == "QUEUE" else "right")
    for name, q in s.queues.items():
        wait = "-" if q.oldest_pending_at is None else duration(max(0.0, s.now - q.oldest_pending_at))
        queues.add_row(cell(name, limit=40), str(q.pending), str(q.running), str(q.dead), wait)
    parts = [Text(f"jobq · {clean(db)}", style="bold"), head]
    if s.queues:
        parts.append(queues)
    return Group(*parts)


def jobs_table(jobs: list[Job], now: float) -> Table:
    jobs = [checked(j)[0] for j in jobs]
    t = Table(box=box.SIMPLE_HEAD)
    for col in ("ID", "STATUS", "QUEUE", "KIND", "PRI", "TRIES", "WHEN", "WORKER", "ERROR"):
        t.add_column(col, justify="right" if col in ("ID", "PRI", "TRIES") else "left",
                     overflow="ellipsis", no_wrap=True)
    for j in jobs:
        t.add_row(str(j.id), status_text(j, now), cell(j.queue, limit=20),
                  cell(j.kind, limit=30), str(j.priority), f"{j.attempts}/{j.max_attempts}",
                  _when(j, now), cell(j.worker or "", limit=24),
                  cell(first_line(j.error), "red", limit=50))
    return t


def _when(j: Job, now: float) -> str:
    if j.status == JobStatus.PENDING:
        return "ready" if j.run_at <= now else f"in {duration(j.run_at - now)}"
    if j.status == JobStatus.RUNNING:
        return f"for {duration(now - (j.started_at or now))}"
    return ago(j.finished_at, now)


def job_view(job: Job, attempts: list[Attempt], now: float) -> Group:
    job, problems = checked(job)
    checked_attempts = [checked(a) for a in attempts]
    attempts = [a for a, _ in checked_attempts]
    problems += tuple(f"attempt {a.attempt}: {p}" for a, ps in checked_attempts for p in ps)
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    rows = [
        ("id", str(job.id)), ("kind", cell(job.kind, limit=None)),
        ("queue", cell(job.queue, limit=None)), ("status", status_text(job, now)),
        ("priority", str(job.priority)), ("attempts", f"{job.attempts} of {job.max_attempts}"),
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
        t = Table(box=box.SIMPLE_HEAD, title="attempts", title_justify="left")
        for col in ("#", "WORKER", "STARTED", "TOOK", "OUTCOME", "ERROR"):
            t.add_column(col, overflow="ellipsis", no_wrap=True)
        for a in attempts:
            took = "-" if a.started_at is None else duration((a.ended_at or now) - a.started_at)
            t.add_row(str(a.attempt), cell(a.worker or "", limit=24), ago(a.started_at, now),
                      took, str(a.outcome), cell(first_line(a.error), "red", limit=60))
        parts.append(t)
    return Group(*parts)


def _stamp(t: float | None, now: float) -> str:
    return "-" if t is None else f"{timestamp(t)} ({ago(t, now)})"


def _json_block(value: Any) -> Text:
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    return cell(text, limit=20000, multiline=True)


def workers_table(workers: list[WorkerInfo], now: float) -> Table:
    workers = [checked(w)[0] for w in workers]
    t = Table(box=box.SIMPLE_HEAD)
    for col in ("WORKER", "HOST", "PID", "QUEUES", "BUSY", "STARTED", "LAST SEEN"):
        t.add_column(col, overflow="ellipsis", no_wrap=True)
    for w in workers:
        queues = "*" if w.queues is None else ",".join(w.queues)
        t.add_row(cell(w.id, limit=40), cell(w.host, limit=24), str(w.pid), cell(queues, limit=30),
                  f"{w.busy}/{w.concurrency}", ago(w.started_at, now), ago(w.last_seen, now))
    return t
