"""The measurements behind ``jobq bench``: each builds its own fresh database, times one
workload, then checks it: every job stored, or every job succeeded exactly once.

Each measurement returns a plain dict, its row in ``jobq bench --json``. Every row has
``ok``, ``expected`` (jobs the workload should have stored or finished), ``counted`` (jobs
the database holds in that state afterwards), ``duplicates`` (ids handed out twice, or jobs
completed or run more than once), ``redelivered`` (jobs the database says were claimed
more than once), ``lost`` (expected jobs missing from ``counted``) and ``errors``.

Hazard: a process forked while it holds an open SQLite connection shares that
connection's locks and cache with its parent and can corrupt the file. Worker processes
therefore come from a fresh forkserver process that never opens a database (or are
spawned, where there is no forkserver), and each opens its own Queue.
"""
from __future__ import annotations

import multiprocessing
import queue as stdqueue
import random
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobq_core import LeaseLost, Queue, Registry, Worker

from . import bench_tasks

KIND = bench_tasks.NOOP
BATCH = 1000  # jobs per enqueue_many / claim_many call
SMALL_BACKLOG = 10_000  # the reference backlog of the scale measurements
HISTORY_AGE = 2 * 86400.0  # the finished jobs of scale_history ended this long ago
IDLE_SECONDS = 2.0  # how long the latency worker's idle CPU use is measured
STATS_CALLS = 50
POOL_ROUNDS = 3  # thread and process pool drains, alternating; the medians are kept
CPU_CONCURRENCY = 2  # slots of the CPU-bound drains: one per core of the README's machine
START_TIMEOUT = 60.0  # a benchmark process that is not ready (or done waiting) by then failed

Note = Callable[[str], None]


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


# -- enqueueing ------------------------------------------------------------------------------

def enqueue(s: Settings, note: Note) -> dict:
    """One job per call, so one transaction per job."""
    with s.queue("enqueue") as q:
        t0 = time.perf_counter()
        ids = [q.enqueue(KIND, {"i": i}) for i in range(s.jobs)]
        seconds = time.perf_counter() - t0
        return _stored_row(q, ids, s.jobs, seconds)


def batch(s: Settings, note: Note) -> dict:
    with s.queue("batch") as q:
        t0 = time.perf_counter()
        ids = _fill(q, s.jobs)
        seconds = time.perf_counter() - t0
        return _stored_row(q, ids, s.jobs, seconds)


def _fill(q: Queue, n: int, start: int = 0, kind: str = KIND) -> list[int]:
    ids: list[int] = []
    for first in range(start, start + n, BATCH):
        ids += q.enqueue_many([(kind, {"i": i}) for i in range(first, min(start + n, first + BATCH))])
    return ids


def _stored_row(q: Queue, ids: list[int], n: int, seconds: float) -> dict:
    counted = q.count(status="pending")
    return _row(n, 1, seconds, expected=n, counted=counted, duplicates=len(ids) - len(set(ids)))


# -- draining --------------------------------------------------------------------------------

def drain_api(s: Settings, note: Note, processes: int) -> dict:
    """Claim + complete, one job at a time, in each of ``processes`` fresh processes."""
    return _drain(s, note, "api", processes)


def drain_worker(s: Settings, note: Note, processes: int) -> dict:
    """``Worker(queue, registry).run(burst=True)`` with default settings, in each process."""
    return _drain(s, note, "worker", processes)


def _drain(s: Settings, note: Note, role: str, processes: int) -> dict:
    name = f"drain-{role}-{processes}"
    with s.queue(name) as q:
        note(f"{name}: enqueueing {s.jobs:,} jobs")
        _fill(q, s.jobs)
    note(f"{name}: starting {processes} process(es)")
    results, seconds = run_processes(role, s.db(name), s.synchronous, processes)
    ran = [i for r in results for i in r["ids"]]
    errors = sum(r["errors"] for r in results)
    with s.queue(name) as q:
        return _finished_row(q, s.jobs, processes, seconds, ran, errors)


def _finished_row(q: Queue, n: int, processes: int, seconds: float, ran: list[int],
                  errors: int, history: int = 0) -> dict:
    """Checks ``n`` jobs: ``ran`` lists one id per completion (or handler call) seen;
    ``history`` jobs had succeeded, earlier than all of them, before the workload."""
    newest = q.list(status="succeeded", limit=n, payloads=False)
    return _row(n, processes, seconds, expected=n,
                counted=q.count(status="succeeded") - history,
                duplicates=len(ran) - len(set(ran)),
                redelivered=sum(1 for j in newest if j.attempts != 1), errors=errors)


def _row(jobs: int, processes: int, seconds: float, *, expected: int, counted: int,
         duplicates: int = 0, redelivered: int = 0, errors: int = 0, **extra: Any) -> dict:
    lost = max(0, expected - counted)
    ok = counted == expected and not (duplicates or redelivered or errors)
    return {"jobs": jobs, "processes": processes, "seconds": round(seconds, 4),
            "rate": round(jobs / seconds, 1) if seconds > 0 else None, **extra, "ok": ok,
            "expected": expected, "counted": counted, "duplicates": duplicates,
            "redelivered": redelivered, "lost": lost, "errors": errors}


# -- thread pool against process pool --------------------------------------------------------

def cpu_jobs(jobs: int) -> int:
    """Jobs of the CPU-bound drains (~20 ms each): a hundredth of ``--jobs``, 10 to 200."""
    return max(10, min(200, jobs // 100))


def pool_noop(s: Settings, note: Note) -> dict:
    """No-op jobs drained by ``Worker(pool="thread")`` and ``Worker(pool="process")``, both
    with the default concurrency (8): the cost of handing each job to a child and back."""
    return _pools(s, note, "pool-noop", bench_tasks.NOOP, s.jobs, None)


def pool_cpu(s: Settings, note: Note) -> dict:
    """CPU-bound jobs (~20 ms of pure Python each) drained with 2 slots: 2 threads, which
    share one core (the GIL), against 2 child processes."""
    return _pools(s, note, "pool-cpu", bench_tasks.CPU, cpu_jobs(s.jobs), CPU_CONCURRENCY)


def _pools(s: Settings, note: Note, name: str, kind: str, n: int,
           concurrency: int | None) -> dict:
    """``POOL_ROUNDS`` drains of ``n`` jobs by each pool, alternating (the first pool of a
    round alternates too), each in a fresh process on a fresh database. A drain's seconds
    run from its first job's start to its last one's end: a process pool's start-up (its
    fork server and children, once per worker) is reported apart, as ``startup_ms``."""
    got: dict[str, list[dict]] = {"thread": [], "process": []}
    for r in range(POOL_ROUNDS):
        for pool in ("thread", "process") if r % 2 == 0 else ("process", "thread"):
            db = f"{name}-{pool}-{r}"
            note(f"{name}: round {r + 1}/{POOL_ROUNDS}, {pool} pool, {n:,} jobs")
            with s.queue(db) as q:
                _fill(q, n, kind=kind)
            [result], _ = run_processes(f"pool:{pool}:{concurrency or ''}", s.db(db),
                                        s.synchronous, 1)
            with s.queue(db) as q:
                jobs = q.list(status="succeeded", limit=n, payloads=False)
                first, last = min(j.started_at for j in jobs), max(j.finished_at for j in jobs)
                row = _finished_row(q, n, 1, last - first, [], result["errors"])
            row["startup_ms"] = round((first - result["t_released"]) * 1000, 1)
            row["concurrency"] = result["concurrency"]
            got[pool].append(row)
    process, thread = (_median_row(got[p]) for p in ("process", "thread"))
    rows = got["process"] + got["thread"]
    checks = {k: sum(r[k] for r in rows) for k in ("duplicates", "redelivered", "errors")}
    return {**_row(n, 1, process["seconds"], expected=n * len(rows),
                   counted=sum(r["counted"] for r in rows), **checks),
            "concurrency": process["concurrency"],
            "rounds": POOL_ROUNDS, "rate_thread": thread["rate"],
            "ratio_to_thread": _ratio(process["rate"], thread["rate"]),
            "startup_ms": process["startup_ms"], "startup_ms_thread": thread["startup_ms"]}


def _median_row(rows: list[dict]) -> dict:
    """The row of the median rate."""
    return sorted(rows, key=lambda r: r["rate"] or 0)[len(rows) // 2]


# -- processes -------------------------------------------------------------------------------

def run_processes(role: str, db: str, synchronous: str, n: int) -> tuple[list[dict], float]:
    """Start ``n`` fresh processes running ``role``; once all have opened the database,
    release them together. Returns their results and the seconds from the release to the
    last one's end (``perf_counter`` is one system-wide clock on Linux, macOS and Windows)."""
    ctx = _context()
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


def _context():
    """Forkserver: a clean server process imports the program once, then forks each worker
    from itself (no database open there), so workers start in milliseconds."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["__main__", __name__])
    return ctx


def _receive(out, procs, expect: str) -> dict:
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
            return value


def _child(role: str, db: str, synchronous: str, start, out) -> None:
    try:
        with Queue(db, synchronous=synchronous) as q:
            out.put(("ready", {}))
            start.wait()
            released = time.time()
            if role.startswith("pool:"):
                _, pool, concurrency = role.split(":")
                result = _drain_with_pool(q, pool, int(concurrency) if concurrency else None)
            else:
                result = _drain_with_worker(q) if role == "worker" else _drain_with_api(q)
            result["t_end"] = time.perf_counter()
            result["t_released"] = released
        out.put(("done", result))
    except BaseException as e:  # noqa: BLE001 - reported by the parent as one line
        out.put(("error", f"{type(e).__name__}: {e}"))


def _drain_with_api(q: Queue) -> dict:
    ids, fenced, name = [], 0, f"bench-{multiprocessing.current_process().pid}"
    while (job := q.claim(name)) is not None:
        try:
            q.complete(job.id, job.token)
        except LeaseLost:
            fenced += 1
            continue
        ids.append(job.id)
    return {"ids": ids, "errors": fenced}


def _drain_with_worker(q: Queue) -> dict:
    ran: list[int] = []
    registry = Registry()
    registry.task(KIND)(lambda _payload, ctx: ran.append(ctx.job_id))
    worker = Worker(q, registry)
    worker.run(burst=True, handle_signals=False)
    return {"ids": ran, "errors": _worker_errors(worker)}


def _drain_with_pool(q: Queue, pool: str, concurrency: int | None) -> dict:
    """A burst of ``bench_tasks``' handlers on a pool. Each job's runs are checked from the
    database (attempts), since a child process cannot report to this one."""
    worker = Worker(q, bench_tasks.registry, pool=pool,
                    **({"concurrency": concurrency} if concurrency else {}))
    worker.run(burst=True, handle_signals=False)
    return {"ids": [], "errors": _worker_errors(worker), "concurrency": worker.concurrency}


def _worker_errors(worker: Worker) -> int:
    """Runs that did not simply succeed: none are expected of a no-op handler."""
    return sum(worker.counts[k] for k in ("failed", "dead", "lost", "timed_out", "released",
                                          "cancelled"))


# -- latency ---------------------------------------------------------------------------------

def latency(s: Settings, note: Note) -> dict:
    """Enqueue-to-start for an idle worker in another process, one job at a time: the
    enqueuer stamps ``time.time()`` into the payload, the handler returns its difference
    to ``time.time()`` as the job's result. Also the idle worker's CPU use."""
    ctx = _context()
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
        delays = sorted(q.get(i).result * 1000 for i in ids)
        row = _finished_row(q, len(ids), 1, 0.0, ran, errors)
    row.update(seconds=None, rate=None)
    return {**row, "samples": len(ids), "p50_ms": round(statistics.median(delays), 3),
            "p99_ms": round(_percentile(delays, 0.99), 3), "max_ms": round(delays[-1], 3),
            "idle_cpu_percent": round(100 * idle_cpu, 2)}


def _latency_samples(q: Queue, p, samples: int) -> list[int]:
    """Each job is enqueued after the previous one finished and a random pause, so the
    worker is idle and the enqueue falls anywhere in its polling cycle."""
    rng = random.Random(6)
    ids = []
    for _ in range(samples):
        time.sleep(rng.uniform(0.005, 0.03))
        job_id = q.enqueue(KIND, {"t": time.time()})
        _wait(lambda: q.get(job_id).status == "succeeded", p, f"job {job_id} to finish",
              interval=0.001)
        ids.append(job_id)
    return ids


def _percentile(ordered: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def _wait(condition, p, what: str, interval: float = 0.01) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not condition():
        if not p.is_alive():
            raise BenchError(f"the benchmark worker exited (status {p.exitcode}) while waiting "
                             f"for {what}")
        if time.monotonic() > deadline:
            raise BenchError(f"timed out waiting for {what}")
        time.sleep(interval)


def _ask(conn, p, command: str):
    conn.send(command)
    if not conn.poll(START_TIMEOUT):
        raise BenchError(f"the benchmark worker did not answer {command!r}")
    kind, value = conn.recv()
    if kind == "error":
        raise BenchError(f"the benchmark worker failed: {value}")
    return value


def _latency_worker(db: str, synchronous: str, conn) -> None:
    """A worker with default settings on a thread; the main thread answers the parent."""
    try:
        ran: list[int] = []
        registry = Registry()

        @registry.task(KIND)
        def stamp(payload, ctx):
            ran.append(ctx.job_id)
            return time.time() - payload["t"]

        with Queue(db, synchronous=synchronous) as q:
            worker = Worker(q, registry)
            thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False},
                                      daemon=True)
            thread.start()
            while conn.recv() == "cpu":
                conn.send(("ok", time.process_time()))  # every thread of this process
            worker.stop()
            thread.join()
        conn.send(("ok", (ran, _worker_errors(worker))))
    except BaseException as e:  # noqa: BLE001 - reported by the parent as one line
        conn.send(("error", f"{type(e).__name__}: {e}"))


# -- scale -----------------------------------------------------------------------------------

def scale_backlog(s: Settings, note: Note) -> dict:
    """Claim + complete the first ``scale_sample`` jobs of a ``scale_jobs`` backlog, against
    all jobs of a backlog of ``scale_sample`` (one process, the two interleaved)."""
    n = s.scale_sample
    with s.queue("backlog-small") as small, s.queue("backlog-large") as large:
        note(f"scale: enqueueing backlogs of {n:,} and {s.scale_jobs:,}")
        _fill(small, n)
        _fill(large, s.scale_jobs)
        note(f"scale: draining {n:,} from each")
        (t_small, ran_small), (t_large, ran_large) = _interleaved_drains([small, large], n)
        rows = [_finished_row(small, n, 1, t_small, ran_small, 0),
                _finished_row(large, n, 1, t_large, ran_large, 0)]
    return {**_sum_rows(rows), "backlog_small": n, "backlog_large": s.scale_jobs,
            "rate_small": rows[0]["rate"], "rate_large": rows[1]["rate"],
            "ratio": _ratio(rows[1]["rate"], rows[0]["rate"])}


def scale_history(s: Settings, note: Note) -> dict:
    """``stats()`` calls, then claim + complete of ``scale_sample`` jobs, with
    ``scale_jobs`` jobs in the table that finished two days ago (outside stats' one-hour
    window), against a table without them (one process, the two interleaved)."""
    n, history = s.scale_sample, s.scale_jobs
    note(f"scale: filling {history:,} finished jobs")
    with s.queue("history-full", clock=_Past(HISTORY_AGE)) as old:
        _fill(old, history)
        while jobs := old.claim_many("bench-history", BATCH):
            old.complete_many([(j.id, j.token, None) for j in jobs])
    with s.queue("history-empty") as empty, s.queue("history-full") as full:
        _fill(empty, n)
        _fill(full, n, start=history)
        note(f"scale: stats() and {n:,} claims, with and without {history:,} finished jobs")
        stats_ms = [0.0, 0.0]
        for _ in range(STATS_CALLS):
            for k, q in enumerate((empty, full)):
                t0 = time.perf_counter()
                q.stats()
                stats_ms[k] += (time.perf_counter() - t0) * 1000 / STATS_CALLS
        (t_empty, ran_empty), (t_full, ran_full) = _interleaved_drains([empty, full], n)
        rows = [_finished_row(empty, n, 1, t_empty, ran_empty, 0),
                _finished_row(full, n, 1, t_full, ran_full, 0, history=history)]
    return {**_sum_rows(rows), "finished": history, "rate_empty": rows[0]["rate"],
            "rate_full": rows[1]["rate"], "ratio": _ratio(rows[1]["rate"], rows[0]["rate"]),
            "stats_ms_empty": round(stats_ms[0], 3), "stats_ms_full": round(stats_ms[1], 3),
            "stats_ratio": _ratio(stats_ms[0], stats_ms[1])}


# -- limits ----------------------------------------------------------------------------------

def limits(s: Settings, note: Note) -> dict:
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
            _fill(q, n)
        note(f"limits: draining {n:,} from each")
        drains = _interleaved_drains([none, other, own], n)
        rows = [_finished_row(q, n, 1, t, ran, 0) for q, (t, ran) in zip((none, other, own), drains)]
    return {**_sum_rows(rows), "rate_none": rows[0]["rate"], "rate_other_limited": rows[1]["rate"],
            "rate_own_limited": rows[2]["rate"], "ratio": _ratio(rows[1]["rate"], rows[0]["rate"]),
            "ratio_own": _ratio(rows[2]["rate"], rows[0]["rate"])}


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
    ran, t0 = [], time.perf_counter()
    for _ in range(n):
        job = q.claim("bench")
        if job is None:
            break
        q.complete(job.id, job.token)
        ran.append(job.id)
    return time.perf_counter() - t0, ran


def _sum_rows(rows: list[dict]) -> dict:
    """One row for a comparison: the jobs and rate of its last side, the checks of both."""
    checks = {k: sum(r[k] for r in rows) for k in ("duplicates", "redelivered", "errors")}
    last = rows[-1]
    return _row(last["jobs"], 1, last["seconds"], expected=sum(r["expected"] for r in rows),
                counted=sum(r["counted"] for r in rows), **checks)


class _Past:
    """A clock ``offset`` seconds behind the system's: jobs it finishes are old history."""

    def __init__(self, offset: float):
        self.offset = offset

    def now(self) -> float:
        return time.time() - self.offset


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None
