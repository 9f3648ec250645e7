"""What each view shows: columns and rows of plain ``Text`` cells built from a snapshot.

Pure functions of (snapshot, now): the 1 Hz tick calls them again with a later ``now`` to
move countdowns without reading the database. Every database string goes through
``safe_text``; states carry a glyph and a word, never colour alone (NO_COLOR users and
colour-blind operators read the same thing).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text

from jobq_core import ErrorGroup
from jobq_core.types import Job, JobStatus, WorkerInfo

from .safe_text import display_text, error_line
from .source import Snapshot

WARN, BAD, DIM, OK = "yellow", "bold red", "dim", "green"
TITLES = {"running": "Running", "queues": "Queues", "workers": "Workers",
          "retries": "Retries", "dead": "Dead", "all": "All"}


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    wide_only: bool = False  # hidden below the wide layout


@dataclass(frozen=True)
class Row:
    key: str
    cells: tuple[Text, ...]
    sort: tuple[Any, ...]
    job_id: int | None = None
    group: ErrorGroup | None = None


# -- formatting --------------------------------------------------------------------------

def fmt_dur(seconds: float | None) -> str:
    """A short age: 42s, 9m05s, 12m, 3h12m, 2d04h. Past ten minutes seconds are dropped:
    nobody needs them there, and a cell that changes every second costs a redraw."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def fmt_clock(seconds: float) -> str:
    s = max(0, int(seconds))
    if s < 3600:
        return f"{s // 60}:{s % 60:02d}"
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _t(s: str, style: str = "") -> Text:
    """Text we composed ourselves (no database content inside)."""
    return Text(s, style=style, no_wrap=True, overflow="ellipsis")


def _num(n: int | None) -> Text:
    return Text(str(n or 0), justify="right", no_wrap=True)


def _id(job_id: int) -> Text:
    return Text(str(job_id), justify="right", no_wrap=True)


# -- cells with states -------------------------------------------------------------------

def lease_cell(job: Job, now: float) -> Text:
    """Countdown to lease expiry: ``! 0:03`` near expiry, ``✗ EXPIRED 0:42 ago`` after."""
    if job.lease_until is None:
        return _t("-", DIM)
    remaining = job.lease_until - now
    if remaining <= 0:
        return _t(f"✗ EXPIRED {fmt_clock(-remaining)} ago", BAD)
    term = job.lease_until - (job.heartbeat_at or job.started_at or job.lease_until)
    # A worker extends every third of the term: under a third left means beats were missed.
    if remaining < max(3.0, term / 3):
        return _t(f"! {fmt_clock(remaining)}", WARN)
    return _t(f"  {fmt_clock(remaining)}")


def worker_state(w: WorkerInfo, now: float, beat: float) -> tuple[str, str]:
    """("● ok" | "◐ late" | "✗ lost", style): late after one missed beat, lost after two
    (each with half a beat of grace for scheduling jitter)."""
    age = now - w.last_seen
    if age > 2.5 * beat:
        return "✗ lost", BAD
    if age > 1.5 * beat:
        return "◐ late", WARN
    return "● ok", OK


def status_cell(job: Job, now: float) -> Text:
    if job.status == JobStatus.PENDING:
        if job.run_at > now:
            return _t("◷ scheduled", DIM)
        return _t("↻ retrying", WARN) if job.attempts else _t("○ pending")
    return {
        JobStatus.RUNNING: _t("▶ running", "cyan"),
        JobStatus.SUCCEEDED: _t("✓ succeeded", OK),
        JobStatus.DEAD: _t("✗ dead", BAD),
        JobStatus.CANCELLED: _t("⊘ cancelled", DIM),
    }.get(job.status, _t(str(job.status)))


def progress_cell(job: Job) -> Text:
    if job.cancel_requested:
        return _t("⊘ cancel requested", "magenta")
    if job.progress is None and not job.progress_message:
        return _t("")
    pct = "" if job.progress is None else f"{job.progress * 100:3.0f}% "
    text = _t(pct)
    text.append_text(display_text(job.progress_message or "", limit=60))
    return text


# -- views -------------------------------------------------------------------------------

def columns(view: str, grouped: bool, wide: bool) -> list[Column]:
    cols = _COLUMNS["dead_groups" if view == "dead" and grouped else view]
    return [c for c in cols if wide or not c.wide_only]


_COLUMNS: dict[str, list[Column]] = {
    "running": [Column("id", "ID"), Column("kind", "KIND"), Column("queue", "QUEUE"),
                Column("worker", "WORKER"), Column("try", "TRY"), Column("runtime", "RUNTIME"),
                Column("lease", "LEASE"), Column("beat", "BEAT", True),
                Column("progress", "PROGRESS", True)],
    "queues": [Column("queue", "QUEUE"), Column("pending", "PENDING"),
               Column("running", "RUNNING"), Column("dead", "DEAD"), Column("lag", "LAG")],
    "workers": [Column("id", "WORKER"), Column("host", "HOST:PID"), Column("state", "STATE"),
                Column("busy", "BUSY"), Column("beat", "BEAT"), Column("queues", "QUEUES"),
                Column("up", "UP", True)],
    "retries": [Column("id", "ID"), Column("kind", "KIND"), Column("queue", "QUEUE"),
                Column("try", "TRY"), Column("next", "NEXT RUN"), Column("error", "LAST ERROR")],
    "dead_groups": [Column("count", "COUNT"), Column("kind", "KIND"),
                    Column("queues", "QUEUES", True), Column("last", "LAST"),
                    Column("error", "ERROR")],
    "dead": [Column("id", "ID"), Column("kind", "KIND"), Column("queue", "QUEUE"),
             Column("try", "TRY"), Column("when", "DIED"), Column("error", "LAST ERROR")],
    "all": [Column("id", "ID"), Column("status", "STATUS"), Column("kind", "KIND"),
            Column("queue", "QUEUE"), Column("try", "TRY"), Column("age", "AGE"),
            Column("worker", "WORKER", True), Column("error", "LAST ERROR", True)],
}


def rows(snap: Snapshot, now: float, *, wide: bool, beat: float) -> list[Row]:
    """The rows of ``snap.view`` at time ``now``, free words of the filter applied."""
    lim = 40 if wide else 14
    view = snap.view
    if view == "running":
        f = snap.filter
        out = [_running(j, now, wide, lim) for j in snap.running
               if f.queue in (None, j.queue) and f.kind in (None, j.kind)
               and f.worker in (None, j.worker) and (not f.error or f.error in (j.error or ""))
               and f.matches(j.id, j.kind, j.queue, j.worker, j.progress_message)]
    elif view == "queues":
        out = [_queue(name, qs, now) for name, qs in snap.stats.queues.items()
               if (snap.filter.queue in (None, name)) and snap.filter.matches(name)]
    elif view == "workers":
        out = [_worker(w, now, beat, wide, lim) for w in snap.workers
               if snap.filter.worker in (None, w.id)
               and snap.filter.matches(w.id, w.host, w.pid, " ".join(w.queues or ()))]
    elif view == "dead" and snap.grouped:
        out = [_group(g, now, wide, lim) for g in snap.rows
               if snap.filter.matches(g.kind, g.line, " ".join(g.queues))]
    else:
        make = {"retries": _retry, "dead": _dead, "all": _any}[view]
        out = [make(j, now, wide, lim) for j in snap.rows
               if snap.filter.matches(j.id, j.kind, j.queue, j.worker, j.error, j.status)]
    return out


def _build(name: str, wide: bool, key: str, values: dict[str, tuple[Text, Any]],
           **extra) -> Row:
    cols = [c for c in _COLUMNS[name] if wide or not c.wide_only]
    return Row(key, tuple(values[c.key][0] for c in cols),
               tuple(values[c.key][1] for c in cols), **extra)


def _running(j: Job, now: float, wide: bool, lim: int) -> Row:
    runtime = now - (j.started_at or now)
    idtext = _id(j.id)
    if j.cancel_requested and not wide:
        idtext = Text(f"⊘{j.id}", justify="right", style="magenta")
    return _build("running", wide, str(j.id), {
        "id": (idtext, j.id),
        "kind": (display_text(j.kind, limit=lim), j.kind),
        "queue": (display_text(j.queue, limit=lim // 2 + 2), j.queue),
        "worker": (display_text(j.worker, limit=lim), j.worker or ""),
        "try": (_t(f"{j.attempts}/{j.max_attempts}"), j.attempts),
        "runtime": (_t(fmt_clock(runtime)), runtime),
        "lease": (lease_cell(j, now), j.lease_until or 0.0),
        "beat": (_t(fmt_dur(now - j.heartbeat_at) if j.heartbeat_at else "-"),
                 -(j.heartbeat_at or 0.0)),
        "progress": (progress_cell(j), j.progress or 0.0),
    }, job_id=j.id)


def _queue(name: str, qs, now: float) -> Row:
    lag = None if qs.oldest_pending_at is None else now - qs.oldest_pending_at
    return _build("queues", True, name, {
        "queue": (display_text(name, limit=40), name),
        "pending": (_num(qs.pending), qs.pending),
        "running": (_num(qs.running), qs.running),
        "dead": (_num(qs.dead) if not qs.dead else Text(str(qs.dead), BAD, justify="right"),
                 qs.dead),
        "lag": (_t(fmt_dur(lag) if lag is not None else "-"), lag or 0.0),
    })


def _worker(w: WorkerInfo, now: float, beat: float, wide: bool, lim: int) -> Row:
    word, style = worker_state(w, now, beat)
    queues = "*" if w.queues is None else ",".join(w.queues)
    host = display_text(w.host, limit=lim)
    host.append(f":{w.pid}")
    return _build("workers", wide, w.id, {
        "id": (display_text(w.id, limit=lim), w.id),
        "host": (host, (w.host, w.pid)),
        "state": (_t(word, style), word),
        "busy": (_t(f"{w.busy}/{w.concurrency}"), w.busy),
        "beat": (_t(fmt_dur(now - w.last_seen)), -w.last_seen),
        "queues": (display_text(queues, limit=lim), queues),
        "up": (_t(fmt_dur(now - w.started_at)), -w.started_at),
    })


def _retry(j: Job, now: float, wide: bool, lim: int) -> Row:
    wait = j.run_at - now
    nxt = _t(f"in {fmt_clock(wait)}") if wait > 0 else _t("due now", WARN)
    line = error_line(j.error)
    return _build("retries", wide, str(j.id), {
        "id": (_id(j.id), j.id),
        "kind": (display_text(j.kind, limit=lim), j.kind),
        "queue": (display_text(j.queue, limit=lim // 2 + 2), j.queue),
        "try": (_t(f"{j.attempts}/{j.max_attempts}"), j.attempts),
        "next": (nxt, j.run_at),
        "error": (display_text(line, limit=120), line),
    }, job_id=j.id)


def _group(g: ErrorGroup, now: float, wide: bool, lim: int) -> Row:
    return _build("dead_groups", wide, f"g:{g.kind}\x00{g.match}\x00{g.last_id}", {
        "count": (Text(f"{g.count}", BAD, justify="right"), g.count),
        "kind": (display_text(g.kind, limit=lim), g.kind),
        "queues": (display_text(",".join(g.queues), limit=lim), g.queues),
        "last": (_t(f"{fmt_dur(now - g.last_finished_at)} ago"), -g.last_finished_at),
        "error": (display_text(g.line, limit=120), g.line),
    }, job_id=g.last_id, group=g)


def _dead(j: Job, now: float, wide: bool, lim: int) -> Row:
    line = error_line(j.error)
    died = now - (j.finished_at or now)
    return _build("dead", wide, str(j.id), {
        "id": (_id(j.id), j.id),
        "kind": (display_text(j.kind, limit=lim), j.kind),
        "queue": (display_text(j.queue, limit=lim // 2 + 2), j.queue),
        "try": (_t(f"{j.attempts}/{j.max_attempts}"), j.attempts),
        "when": (_t(f"{fmt_dur(died)} ago"), died),
        "error": (display_text(line, limit=120), line),
    }, job_id=j.id)


def _any(j: Job, now: float, wide: bool, lim: int) -> Row:
    line = error_line(j.error)
    status = status_cell(j, now)
    return _build("all", wide, str(j.id), {
        "id": (_id(j.id), j.id),
        "status": (status, status.plain),
        "kind": (display_text(j.kind, limit=lim), j.kind),
        "queue": (display_text(j.queue, limit=lim // 2 + 2), j.queue),
        "try": (_t(f"{j.attempts}/{j.max_attempts}"), j.attempts),
        "age": (_t(fmt_dur(now - j.created_at)), -j.created_at),
        "worker": (display_text(j.worker, limit=lim), j.worker or ""),
        "error": (display_text(line, limit=120), line),
    }, job_id=j.id)
