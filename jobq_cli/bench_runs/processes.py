"""Fresh benchmark processes, started together, each draining on its own Queue.

Hazard: a process forked while it holds an open SQLite connection shares that
connection's locks and cache with its parent and can corrupt the file. Worker processes
therefore come from a fresh forkserver process that never opens a database (or are
spawned, where there is no forkserver), and each opens its own Queue.
"""
from __future__ import annotations

import multiprocessing
import queue as stdqueue
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from jobq_core import LeaseLost, PoolKind, Queue, Registry

from .. import bench_tasks
from .common import KIND, START_TIMEOUT, BenchError, claim_token

if TYPE_CHECKING:
    from multiprocessing.context import ForkServerContext, SpawnContext
    from multiprocessing.process import BaseProcess
    from multiprocessing.queues import Queue as ProcessQueue
    from multiprocessing.synchronize import Event

    from jobq_core import Worker


def run_processes(role: str, db: str, synchronous: str, n: int
                  ) -> tuple[list[dict[str, Any]], float]:
    """Start ``n`` fresh processes running ``role``; once all have opened the database,
    release them together. Returns their results and the seconds from the release to the
    last one's end (``perf_counter`` is one system-wide clock on Linux, macOS and Windows)."""
    ctx = context()
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_child, args=(role, db, synchronous, start, out), daemon=True)
             for _ in range(n)]
    for p in procs:
        p.start()
    try:
        for _ in range(n):
            _receive(out, procs, "ready")
        t0 = time.perf_counter()
        start.set()
        results = [_receive(out, procs, "done") for _ in range(n)]
        for p in procs:
            p.join(START_TIMEOUT)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
    return results, max(r["t_end"] for r in results) - t0


def context() -> SpawnContext | ForkServerContext:
    """Forkserver: a clean server process imports the program once, then forks each worker
    from itself (no database open there), so workers start in milliseconds."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["__main__", __name__])
    return ctx


def _receive(out: ProcessQueue[tuple[str, Any]], procs: Sequence[BaseProcess], expect: str
             ) -> dict[str, Any]:
    """The next message, or BenchError when a process reports an error or died."""
    while True:
        try:
            kind, value = out.get(timeout=1.0)
        except stdqueue.Empty:
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead:
                raise BenchError(f"a benchmark process exited with status {dead[0].exitcode}")
            continue
        if kind == "error":
            raise BenchError(f"a benchmark process failed: {value}")
        if kind == expect:
            result: dict[str, Any] = value  # "ready" and "done" carry a dict
            return result


def _child(role: str, db: str, synchronous: str, start: Event,
           out: ProcessQueue[tuple[str, Any]]) -> None:
    try:
        with Queue(db, synchronous=synchronous) as q:
            out.put(("ready", {}))
            start.wait()
            released = time.time()
            if role.startswith("pool:"):
                _, pool, concurrency = role.split(":")
                result = _drain_with_pool(q, PoolKind(pool),
                                          int(concurrency) if concurrency else None)
            else:
                result = _drain_with_worker(q) if role == "worker" else _drain_with_api(q)
            result["t_end"] = time.perf_counter()
            result["t_released"] = released
        out.put(("done", result))
    except BaseException as e:  # noqa: BLE001 - reported by the parent as one line
        out.put(("error", f"{type(e).__name__}: {e}"))


def _drain_with_api(q: Queue) -> dict[str, Any]:
    ids: list[int] = []
    fenced, name = 0, f"bench-{multiprocessing.current_process().pid}"
    while (job := q.claim(name)) is not None:
        try:
            q.complete(job.id, claim_token(job))
        except LeaseLost:
            fenced += 1
            continue
        ids.append(job.id)
    return {"ids": ids, "errors": fenced}


def _drain_with_worker(q: Queue) -> dict[str, Any]:
    ran: list[int] = []
    registry = Registry()
    registry.task(KIND)(lambda _payload, ctx: ran.append(ctx.job_id))
    worker = _worker_class()(q, registry)
    worker.run(burst=True, handle_signals=False)
    return {"ids": ran, "errors": worker_errors(worker)}


def _drain_with_pool(q: Queue, pool: PoolKind, concurrency: int | None) -> dict[str, Any]:
    """A burst of ``bench_tasks``' handlers on a pool. Each job's runs are checked from the
    database (attempts), since a child process cannot report to this one."""
    extra: dict[str, Any] = {"concurrency": concurrency} if concurrency else {}
    worker = _worker_class()(q, bench_tasks.registry, pool=pool, **extra)
    worker.run(burst=True, handle_signals=False)
    return {"ids": [], "errors": worker_errors(worker), "concurrency": worker.concurrency}


def _worker_class() -> type[Worker]:
    """``jobq_core.Worker``, imported when a workload runs (``jobq`` imports this module
    for every command, and the worker runtime is a third of jobq_core's import time)."""
    from jobq_core import Worker

    return Worker


def worker_errors(worker: Worker) -> int:
    """Runs that did not simply succeed: none are expected of a no-op handler."""
    return sum(worker.counts[k] for k in ("failed", "dead", "lost", "timed_out", "released",
                                          "cancelled"))
