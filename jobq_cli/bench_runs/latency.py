"""Enqueue-to-start latency of an idle worker in another process, and its idle CPU use."""
from __future__ import annotations

import random
import statistics
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jobq_core import Job, JobContext, Queue, Registry

from .common import (
    IDLE_SECONDS, KIND, START_TIMEOUT, BenchError, Note, Row, Settings, finished_row,
)
from .processes import context, worker_errors

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess


def latency(s: Settings, note: Note) -> Row:
    """Enqueue-to-start for an idle worker in another process, one job at a time: the
    enqueuer stamps ``time.time()`` into the payload, the handler returns its difference
    to ``time.time()`` as the job's result. Also the idle worker's CPU use."""
    ctx = context()
    mine, theirs = ctx.Pipe()
    with s.queue("latency") as q:
        p = ctx.Process(target=_latency_worker, args=(s.db("latency"), s.synchronous, theirs),
                        daemon=True)
        p.start()
        try:
            _wait(lambda: q.workers(), p, "the latency worker to start")
            note("latency: measuring the idle worker's CPU use")
            time.sleep(0.3)
            cpu0, t0 = _ask(mine, p, "cpu"), time.perf_counter()
            time.sleep(IDLE_SECONDS)
            idle_cpu = (_ask(mine, p, "cpu") - cpu0) / (time.perf_counter() - t0)
            note(f"latency: {s.samples} samples")
            ids = _latency_samples(q, p, s.samples)
            ran, errors = _ask(mine, p, "stop")
            p.join(START_TIMEOUT)
        finally:
            if p.is_alive():
                p.kill()
                p.join()
        delays = sorted(_job(q, i).result * 1000 for i in ids)
        row = finished_row(q, len(ids), 1, 0.0, ran, errors)
    row.update(seconds=None, rate=None)
    return {**row, "samples": len(ids), "p50_ms": round(statistics.median(delays), 3),
            "p99_ms": round(_percentile(delays, 0.99), 3), "max_ms": round(delays[-1], 3),
            "idle_cpu_percent": round(100 * idle_cpu, 2)}


def _job(q: Queue, job_id: int) -> Job:
    job = q.get(job_id)
    if job is None:
        raise BenchError(f"job {job_id} is gone from the benchmark's database")
    return job


def _latency_samples(q: Queue, p: BaseProcess, samples: int) -> list[int]:
    """Each job is enqueued after the previous one finished and a random pause, so the
    worker is idle and the enqueue falls anywhere in its polling cycle."""
    rng = random.Random(6)
    ids: list[int] = []
    for _ in range(samples):
        time.sleep(rng.uniform(0.005, 0.03))
        job_id = q.enqueue(KIND, {"t": time.time()})
        _wait(lambda: _job(q, job_id).status == "succeeded", p, f"job {job_id} to finish",
              interval=0.001)
        ids.append(job_id)
    return ids


def _percentile(ordered: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def _wait(condition: Callable[[], object], p: BaseProcess, what: str,
          interval: float = 0.01) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not condition():
        if not p.is_alive():
            raise BenchError(f"the benchmark worker exited (status {p.exitcode}) while waiting "
                             f"for {what}")
        if time.monotonic() > deadline:
            raise BenchError(f"timed out waiting for {what}")
        time.sleep(interval)


def _ask(conn: Connection, p: BaseProcess, command: str) -> Any:
    """The worker's answer: its CPU time for "cpu", (ran, errors) for "stop"."""
    conn.send(command)
    if not conn.poll(START_TIMEOUT):
        raise BenchError(f"the benchmark worker did not answer {command!r}")
    kind, value = conn.recv()
    if kind == "error":
        raise BenchError(f"the benchmark worker failed: {value}")
    return value


def _latency_worker(db: str, synchronous: str, conn: Connection) -> None:
    """A worker with default settings on a thread; the main thread answers the parent."""
    try:
        ran: list[int] = []
        registry = Registry()

        @registry.task(KIND)
        def stamp(payload: dict[str, float], ctx: JobContext) -> float:
            ran.append(ctx.job_id)
            return time.time() - payload["t"]

        with Queue(db, synchronous=synchronous) as q:
            from jobq_core import Worker  # loaded here, not when `jobq` starts

            worker = Worker(q, registry)
            thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False},
                                      daemon=True)
            thread.start()
            while conn.recv() == "cpu":
                conn.send(("ok", time.process_time()))  # every thread of this process
            worker.stop()
            thread.join()
        conn.send(("ok", (ran, worker_errors(worker))))
    except BaseException as e:  # noqa: BLE001 - reported by the parent as one line
        conn.send(("error", f"{type(e).__name__}: {e}"))
