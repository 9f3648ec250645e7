"""What a big table and queue controls cost a claim: a large backlog, a long history of
finished jobs, limits on other queues and on the queue drained. Each compares two or three
databases drained in one process, interleaved."""
from __future__ import annotations

import time

from jobq_core import Queue

from .common import (
    BATCH, HISTORY_AGE, STATS_CALLS, Note, Row, Settings, claim_token, finished_row, fill,
    ratio, sum_rows,
)


def scale_backlog(s: Settings, note: Note) -> Row:
    """Claim + complete the first ``scale_sample`` jobs of a ``scale_jobs`` backlog, against
    all jobs of a backlog of ``scale_sample`` (one process, the two interleaved)."""
    n = s.scale_sample
    with s.queue("backlog-small") as small, s.queue("backlog-large") as large:
        note(f"scale: enqueueing backlogs of {n:,} and {s.scale_jobs:,}")
        fill(small, n)
        fill(large, s.scale_jobs)
        note(f"scale: draining {n:,} from each")
        (t_small, ran_small), (t_large, ran_large) = _interleaved_drains([small, large], n)
        rows = [finished_row(small, n, 1, t_small, ran_small, 0),
                finished_row(large, n, 1, t_large, ran_large, 0)]
    return {**sum_rows(rows), "backlog_small": n, "backlog_large": s.scale_jobs,
            "rate_small": rows[0]["rate"], "rate_large": rows[1]["rate"],
            "ratio": ratio(rows[1]["rate"], rows[0]["rate"])}


def scale_history(s: Settings, note: Note) -> Row:
    """``stats()`` calls, then claim + complete of ``scale_sample`` jobs, with
    ``scale_jobs`` jobs in the table that finished two days ago (outside stats' one-hour
    window), against a table without them (one process, the two interleaved)."""
    n, history = s.scale_sample, s.scale_jobs
    note(f"scale: filling {history:,} finished jobs")
    with s.queue("history-full", clock=_Past(HISTORY_AGE)) as old:
        fill(old, history)
        while jobs := old.claim_many("bench-history", BATCH):
            old.complete_many([(j.id, claim_token(j), None) for j in jobs])
    with s.queue("history-empty") as empty, s.queue("history-full") as full:
        fill(empty, n)
        fill(full, n, start=history)
        note(f"scale: stats() and {n:,} claims, with and without {history:,} finished jobs")
        stats_ms = [0.0, 0.0]
        for _ in range(STATS_CALLS):
            for k, q in enumerate((empty, full)):
                t0 = time.perf_counter()
                q.stats()
                stats_ms[k] += (time.perf_counter() - t0) * 1000 / STATS_CALLS
        (t_empty, ran_empty), (t_full, ran_full) = _interleaved_drains([empty, full], n)
        rows = [finished_row(empty, n, 1, t_empty, ran_empty, 0),
                finished_row(full, n, 1, t_full, ran_full, 0, history=history)]
    return {**sum_rows(rows), "finished": history, "rate_empty": rows[0]["rate"],
            "rate_full": rows[1]["rate"], "ratio": ratio(rows[1]["rate"], rows[0]["rate"]),
            "stats_ms_empty": round(stats_ms[0], 3), "stats_ms_full": round(stats_ms[1], 3),
            "stats_ratio": ratio(stats_ms[0], stats_ms[1])}


def limits(s: Settings, note: Note) -> Row:
    """Claim + complete ``jobs`` jobs one at a time (claims on every queue, as a worker
    without --queue makes them) three ways, interleaved: with no queue controls; with a
    concurrency limit and a rate limit on an unrelated queue (what limits cost the queues
    without them); and with a concurrency limit (never reached) on the queue drained
    (what a limit costs its own queue)."""
    n = s.jobs
    with s.queue("limits-none") as none, s.queue("limits-other") as other, \
            s.queue("limits-own") as own:
        other.set_limit("fragile", concurrency=1, rate="10/s")
        own.set_limit("default", concurrency=n + 1)
        for q in (none, other, own):
            fill(q, n)
        note(f"limits: draining {n:,} from each")
        drains = _interleaved_drains([none, other, own], n)
        rows = [finished_row(q, n, 1, t, ran, 0) for q, (t, ran) in zip((none, other, own), drains)]
    return {**sum_rows(rows), "rate_none": rows[0]["rate"], "rate_other_limited": rows[1]["rate"],
            "rate_own_limited": rows[2]["rate"], "ratio": ratio(rows[1]["rate"], rows[0]["rate"]),
            "ratio_own": ratio(rows[2]["rate"], rows[0]["rate"])}


def _interleaved_drains(queues: list[Queue], n: int) -> list[tuple[float, list[int]]]:
    """Claim + complete ``n`` jobs from each queue, one at a time, taking turns every
    ``BATCH`` jobs, so that the machine's changing load falls on both alike.
    Returns (seconds, completed ids) per queue."""
    out: list[tuple[float, list[int]]] = [(0.0, []) for _ in queues]
    for first in range(0, n, BATCH):
        for k, q in enumerate(queues):
            seconds, ran = _claim_and_complete(q, min(BATCH, n - first))
            out[k] = (out[k][0] + seconds, out[k][1] + ran)
    return out


def _claim_and_complete(q: Queue, n: int) -> tuple[float, list[int]]:
    """Up to ``n`` jobs, one at a time, in this process: (seconds, completed ids)."""
    ran: list[int] = []
    t0 = time.perf_counter()
    for _ in range(n):
        job = q.claim("bench")
        if job is None:
            break
        q.complete(job.id, claim_token(job))
        ran.append(job.id)
    return time.perf_counter() - t0, ran


class _Past:
    """A clock ``offset`` seconds behind the system's: jobs it finishes are old history."""

    def __init__(self, offset: float):
        self.offset = offset

    def now(self) -> float:
        return time.time() - self.offset
