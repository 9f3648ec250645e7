"""Enqueueing and draining: jobs per second one call, one batch, several processes, a
worker, and the thread pool against the process pool."""
from __future__ import annotations

import time

from jobq_core import PoolKind

from .. import bench_tasks
from .common import (
    CPU_CONCURRENCY, KIND, POOL_ROUNDS, Note, Row, Settings, fill, finished_row, median_row,
    ratio, row, stored_row,
)
from .processes import run_processes


def enqueue(s: Settings, note: Note) -> Row:
    """One job per call, so one transaction per job."""
    with s.queue("enqueue") as q:
        t0 = time.perf_counter()
        ids = [q.enqueue(KIND, {"i": i}) for i in range(s.jobs)]
        seconds = time.perf_counter() - t0
        return stored_row(q, ids, s.jobs, seconds)


def batch(s: Settings, note: Note) -> Row:
    with s.queue("batch") as q:
        t0 = time.perf_counter()
        ids = fill(q, s.jobs)
        seconds = time.perf_counter() - t0
        return stored_row(q, ids, s.jobs, seconds)


def drain_api(s: Settings, note: Note, processes: int) -> Row:
    """Claim + complete, one job at a time, in each of ``processes`` fresh processes."""
    return _drain(s, note, "api", processes)


def drain_worker(s: Settings, note: Note, processes: int) -> Row:
    """``Worker(queue, registry).run(burst=True)`` with default settings, in each process."""
    return _drain(s, note, "worker", processes)


def _drain(s: Settings, note: Note, role: str, processes: int) -> Row:
    name = f"drain-{role}-{processes}"
    with s.queue(name) as q:
        note(f"{name}: enqueueing {s.jobs:,} jobs")
        fill(q, s.jobs)
    note(f"{name}: starting {processes} process(es)")
    results, seconds = run_processes(role, s.db(name), s.synchronous, processes)
    ran = [i for r in results for i in r["ids"]]
    errors = sum(r["errors"] for r in results)
    with s.queue(name) as q:
        return finished_row(q, s.jobs, processes, seconds, ran, errors)


def cpu_jobs(jobs: int) -> int:
    """Jobs of the CPU-bound drains (~20 ms each): a hundredth of ``--jobs``, 10 to 200."""
    return max(10, min(200, jobs // 100))


def pool_noop(s: Settings, note: Note) -> Row:
    """No-op jobs drained by the thread pool and by the process pool (``PoolKind``), both
    with the default concurrency (8): the cost of handing each job to a child and back."""
    return _pools(s, note, "pool-noop", bench_tasks.NOOP, s.jobs, None)


def pool_cpu(s: Settings, note: Note) -> Row:
    """CPU-bound jobs (~20 ms of pure Python each) drained with 2 slots: 2 threads, which
    share one core (the GIL), against 2 child processes."""
    return _pools(s, note, "pool-cpu", bench_tasks.CPU, cpu_jobs(s.jobs), CPU_CONCURRENCY)


def _pools(s: Settings, note: Note, name: str, kind: str, n: int,
           concurrency: int | None) -> Row:
    """``POOL_ROUNDS`` drains of ``n`` jobs by each pool, alternating (the first pool of a
    round alternates too), each in a fresh process on a fresh database. A drain's seconds
    run from its first job's start to its last one's end: a process pool's start-up (its
    fork server and children, once per worker) is reported apart, as ``startup_ms``."""
    thread_first = (PoolKind.THREAD, PoolKind.PROCESS)
    got: dict[PoolKind, list[Row]] = {pool: [] for pool in thread_first}
    for r in range(POOL_ROUNDS):
        for pool in thread_first if r % 2 == 0 else thread_first[::-1]:
            db = f"{name}-{pool}-{r}"
            note(f"{name}: round {r + 1}/{POOL_ROUNDS}, {pool} pool, {n:,} jobs")
            with s.queue(db) as q:
                fill(q, n, kind=kind)
            [result], _ = run_processes(f"pool:{pool}:{concurrency or ''}", s.db(db),
                                        s.synchronous, 1)
            with s.queue(db) as q:
                jobs = q.list(status="succeeded", limit=n, payloads=False)
                # succeeded jobs all have both times
                first = min(j.started_at for j in jobs if j.started_at is not None)
                last = max(j.finished_at for j in jobs if j.finished_at is not None)
                drained = finished_row(q, n, 1, last - first, [], result["errors"])
            drained["startup_ms"] = round((first - result["t_released"]) * 1000, 1)
            drained["concurrency"] = result["concurrency"]
            got[pool].append(drained)
    process, thread = (median_row(got[p]) for p in (PoolKind.PROCESS, PoolKind.THREAD))
    rows = got[PoolKind.PROCESS] + got[PoolKind.THREAD]
    checks = {k: sum(r[k] for r in rows) for k in ("duplicates", "redelivered", "errors")}
    return {**row(n, 1, process["seconds"], expected=n * len(rows),
                   counted=sum(r["counted"] for r in rows), **checks),
            "concurrency": process["concurrency"],
            "rounds": POOL_ROUNDS, "rate_thread": thread["rate"],
            "ratio_to_thread": ratio(process["rate"], thread["rate"]),
            "startup_ms": process["startup_ms"], "startup_ms_thread": thread["startup_ms"]}
