"""What every measurement shares: its settings, its fresh databases, and its row (the
checks every row carries; see the package's docstring)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobq_core import Job, Queue

from .. import bench_tasks


KIND = bench_tasks.NOOP
BATCH = 1000  # jobs per enqueue_many / claim_many call
SMALL_BACKLOG = 10_000  # the reference backlog of the scale measurements
HISTORY_AGE = 2 * 86400.0  # the finished jobs of scale_history ended this long ago
IDLE_SECONDS = 2.0  # how long the latency worker's idle CPU use is measured
STATS_CALLS = 50
POOL_ROUNDS = 3  # thread and process pool drains, alternating; the medians are kept
CPU_CONCURRENCY = 2  # slots of the CPU-bound drains: one per core of the machine docs/performance.md was measured on
START_TIMEOUT = 60.0  # a benchmark process that is not ready (or done waiting) by then failed

Note = Callable[[str], None]
# A measurement's row in ``jobq bench --json`` (see the package's docstring)
Row = dict[str, Any]


class BenchError(Exception):
    """A benchmark process failed or hung: reported as one line."""


@dataclass(frozen=True)
class Settings:
    dir: Path
    jobs: int
    processes: int
    scale_jobs: int
    samples: int
    synchronous: str

    def db(self, name: str) -> str:
        return str(self.dir / f"{name}.db")

    def queue(self, name: str, **kwargs: Any) -> Queue:
        return Queue(self.db(name), synchronous=self.synchronous, **kwargs)

    @property
    def scale_sample(self) -> int:
        """Jobs drained (and backlog size) on the small side of the scale comparisons."""
        return max(1, min(SMALL_BACKLOG, self.scale_jobs // 10))


def claim_token(job: Job) -> int:
    """The token of a job just claimed (Queue.claim's jobs always carry one)."""
    assert job.token is not None, "a claimed job carries its claim's token"
    return job.token


def fill(q: Queue, n: int, start: int = 0, kind: str = KIND) -> list[int]:
    ids: list[int] = []
    for first in range(start, start + n, BATCH):
        last = min(start + n, first + BATCH)
        ids += q.enqueue_many([(kind, {"i": i}) for i in range(first, last)])
    return ids


def stored_row(q: Queue, ids: list[int], n: int, seconds: float) -> Row:
    counted = q.count(status="pending")
    return row(n, 1, seconds, expected=n, counted=counted, duplicates=len(ids) - len(set(ids)))


def finished_row(q: Queue, n: int, processes: int, seconds: float, ran: list[int],
                  errors: int, history: int = 0) -> Row:
    """Checks ``n`` jobs: ``ran`` lists one id per completion (or handler call) seen;
    ``history`` jobs had succeeded, earlier than all of them, before the workload."""
    newest = q.list(status="succeeded", limit=n, payloads=False)
    return row(n, processes, seconds, expected=n,
                counted=q.count(status="succeeded") - history,
                duplicates=len(ran) - len(set(ran)),
                redelivered=sum(1 for j in newest if j.attempts != 1), errors=errors)


def row(jobs: int, processes: int, seconds: float, *, expected: int, counted: int,
         duplicates: int = 0, redelivered: int = 0, errors: int = 0, **extra: Any) -> Row:
    lost = max(0, expected - counted)
    ok = counted == expected and not (duplicates or redelivered or errors)
    return {"jobs": jobs, "processes": processes, "seconds": round(seconds, 4),
            "rate": round(jobs / seconds, 1) if seconds > 0 else None, **extra, "ok": ok,
            "expected": expected, "counted": counted, "duplicates": duplicates,
            "redelivered": redelivered, "lost": lost, "errors": errors}


def median_row(rows: list[Row]) -> Row:
    """The row of the median rate."""
    return sorted(rows, key=lambda r: r["rate"] or 0)[len(rows) // 2]


def sum_rows(rows: list[Row]) -> Row:
    """One row for a comparison: the jobs and rate of its last side, the checks of both."""
    checks = {k: sum(r[k] for r in rows) for k in ("duplicates", "redelivered", "errors")}
    last = rows[-1]
    return row(last["jobs"], 1, last["seconds"], expected=sum(r["expected"] for r in rows),
                counted=sum(r["counted"] for r in rows), **checks)


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None
