#!/usr/bin/env python3
"""pg_drain.py - jobq on PostgreSQL against its own statements hand-written on psycopg.

On a new database of the server given by --url (default: the local server), each run on
a fresh table:

  raw-1      jobq's claim and fenced-complete statements on one psycopg connection,
             one job per transaction: the physical anchor for this design and server
  api-1      the same loop through jobq's Queue (claim, complete)
  worker     a real Worker (threads, batched completions) in burst mode, 1 process
  raw-batch  N jobs inserted by one hand-written INSERT ... SELECT FROM unnest
  batch      the same through Queue.enqueue_many
  bloat      --bloat-jobs jobs drained by a Worker, jobq_jobs' size (table + indexes +
             TOAST) sampled every --sample seconds; with --prune-every S, finished jobs
             older than S seconds are pruned every S seconds meanwhile
  latency    --latency jobs enqueued one at a time, --gap seconds apart, to an idle Worker
             (another connection of the same process): enqueue-to-start p50 and p95, in ms;
             with --delay D each job is delayed by D s and the figures are from its run_at
  burst      --burst N: N jobs enqueued one per transaction, from 1 and from 4 processes,
             while a LISTEN connection counts the notifications they sent (the per-queue
             limiter should send few); --notify-window W sets the limiter's window (0:
             a notification per enqueue) to compare
  scale      --scale: claims (with completions) per second through the API with 10,000
             and with 1,000,000 jobs pending (filled by generate_series, then analyzed),
             in 1 queue and spread over 4, 3,000 claims each
  limits     --limits: API claims (with completions) on every queue, interleaved in chunks
             of 500, with no queue controls, with a concurrency and a rate limit on an
             unrelated queue, and with a concurrency limit (never reached) on the queue
             drained: what limits cost the queues without them, and their own
  steady     --steady seconds of a producer keeping --backlog jobs pending while a Worker
             drains and finished jobs older than 10 s are pruned every 10 s: the sizes
             should level off instead of growing with the jobs that went through

Every rate is jobs/s; ratios are to raw-1 (raw-batch for batch) in the same run. The
machine is shared and noisy: ratios measured together are what count.

Usage: python bench/pg_drain.py [--url postgresql://postgres@127.0.0.1/postgres]
       [--n 5000] [--bloat-jobs 100000] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import threading
import time
import uuid
from urllib.parse import urlsplit, urlunsplit

import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from jobq_core import Queue, Registry, Worker  # noqa: E402

CLAIM = (
    "WITH picked AS MATERIALIZED (SELECT id FROM jobq_jobs WHERE status='pending' AND "
    "run_at<=%s ORDER BY priority DESC, run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) "
    "UPDATE jobq_jobs j SET status='running', attempts=j.attempts+1, lease_until=%s, "
    "worker=%s, token=nextval('jobq_tokens'), started_at=%s, heartbeat_at=%s "
    "WHERE j.id = ANY(ARRAY(SELECT id FROM picked)) RETURNING j.id, j.token, j.payload"
)
COMPLETE = (
    "UPDATE jobq_jobs SET status='succeeded', result=%s, finished_at=%s, lease_until=NULL "
    "WHERE id=%s AND status='running' AND token=%s"
)
RAW_BATCH = (
    "INSERT INTO jobq_jobs(kind, payload, queue, priority, run_at, max_attempts, created_at) "
    "SELECT 'noop', p, 'default', 0, %s, 20, %s FROM unnest(%s::text[]) AS p"
)


class Database:
    def __init__(self, server_url: str):
        self.server_url = server_url
        self.name = f"jobq_bench_{uuid.uuid4().hex[:8]}"
        self.url = urlunsplit(urlsplit(server_url)._replace(path=f"/{self.name}"))

    def __enter__(self):
        with psycopg.connect(self.server_url, autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{self.name}"')
        Queue(self.url).close()  # the schema
        return self

    def __exit__(self, *exc):
        with psycopg.connect(self.server_url, autocommit=True) as c:
            c.execute(f'DROP DATABASE "{self.name}" WITH (FORCE)')


def fill(url: str, n: int) -> None:
    with Queue(url) as q:
        for i in range(0, n, 5000):
            q.enqueue_many([("noop", {"i": j}) for j in range(i, min(n, i + 5000))])


def raw_one(url: str, n: int) -> float:
    fill(url, n)
    with psycopg.connect(url, autocommit=True) as c:
        started = time.perf_counter()
        done = 0
        while True:
            now = time.time()
            row = c.execute(CLAIM, (now, now + 30, "raw", now, now)).fetchone()
            if row is None:
                break
            if c.execute(COMPLETE, (None, time.time(), row[0], row[1])).rowcount != 1:
                raise SystemExit("raw: a completion was fenced out")
            done += 1
        seconds = time.perf_counter() - started
    assert done == n, done
    return n / seconds


def api_one(url: str, n: int) -> float:
    fill(url, n)
    with Queue(url) as q:
        started = time.perf_counter()
        done = 0
        while (job := q.claim("api")) is not None:
            q.complete(job.id, job.token)
            done += 1
        seconds = time.perf_counter() - started
    assert done == n, done
    return n / seconds


def worker_drain(url: str, n: int, concurrency: int = 8, sample=None, pruned=False) -> float:
    fill(url, n)
    registry = Registry()
    registry.task("noop")(lambda payload: None)
    with Queue(url) as q:
        w = Worker(q, registry, concurrency=concurrency)
        stop = threading.Event()
        sampler = threading.Thread(target=sample, args=(stop,), daemon=True) if sample else None
        started = time.perf_counter()
        if sampler:
            sampler.start()
        w.run(burst=True, handle_signals=False)
        seconds = time.perf_counter() - started
        stop.set()
        if sampler:
            sampler.join()
        assert q.count("pending") == 0 and (pruned or q.count("succeeded") == n)
    return n / seconds


def raw_batch(url: str, n: int) -> float:
    payloads = [json.dumps({"i": i}) for i in range(n)]
    with psycopg.connect(url, autocommit=True) as c:
        started = time.perf_counter()
        for i in range(0, n, 1000):
            now = time.time()
            c.execute(RAW_BATCH, (now, now, payloads[i:i + 1000]))
        return n / (time.perf_counter() - started)


def api_batch(url: str, n: int) -> float:
    with Queue(url) as q:
        started = time.perf_counter()
        for i in range(0, n, 1000):
            q.enqueue_many([("noop", {"i": j}) for j in range(i, min(n, i + 1000))])
        return n / (time.perf_counter() - started)


def sizes(url: str) -> dict[str, int]:
    """Bytes: the jobs table with everything (indexes, TOAST), its heap alone, the claim's
    indexes."""
    with psycopg.connect(url) as c:
        return dict(c.execute(
            "SELECT 'total', pg_total_relation_size('jobq_jobs') UNION ALL "
            "SELECT 'heap', pg_relation_size('jobq_jobs') UNION ALL "
            "SELECT 'pending_idx', pg_relation_size('jobq_jobs_pending') + "
            "pg_relation_size('jobq_jobs_pending_queue')"
        ).fetchall())


def steady(url: str, seconds: float, backlog: int, sample: float) -> dict:
    registry = Registry()
    registry.task("noop")(lambda payload: None)
    stop = threading.Event()
    samples: list[dict] = []

    def produce():
        with Queue(url) as q:
            while not stop.is_set():
                missing = backlog - q.count("pending")
                if missing > 0:
                    q.enqueue_many([("noop", {"i": i}) for i in range(min(missing, 2000))])
                else:
                    stop.wait(0.05)

    def prune():
        with Queue(url) as q:
            while not stop.wait(10):
                q.prune(10)

    with Queue(url) as q:
        w = Worker(q, registry, concurrency=8)
        threads = [threading.Thread(target=f, daemon=True) for f in (produce, prune)]
        runner = threading.Thread(target=lambda: w.run(handle_signals=False), daemon=True)
        for t in threads:
            t.start()
        runner.start()
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            time.sleep(sample)
            samples.append({"t": round(time.perf_counter() - t0), "done": w.counts["succeeded"],
                            **sizes(url)})
            print(f"  {samples[-1]}", flush=True)
        stop.set()
        w.stop()
        runner.join(60)
        for t in threads:
            t.join(60)
    return {"seconds": seconds, "backlog": backlog, "samples": samples}


def latency(url: str, n: int, gap: float, poll_only: bool, delay: float = 0.0) -> dict:
    registry = Registry()
    delays: list[float] = []
    registry.task("stamp")(lambda payload: delays.append(time.time() - payload["t"]))
    with Queue(url) as producer, Queue(url, **({'poll_only': True} if poll_only else {})) as q:
        w = Worker(q, registry, concurrency=4)
        runner = threading.Thread(target=lambda: w.run(handle_signals=False), daemon=True)
        runner.start()
        time.sleep(1.0)  # the worker is idle, waiting on its watch
        for _ in range(n):
            producer.enqueue("stamp", {"t": time.time() + delay}, delay=delay)
            time.sleep(gap)
        deadline = time.monotonic() + 10
        while len(delays) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        w.stop()
        runner.join(30)
    ms = sorted(d * 1000 for d in delays)
    return {"jobs": n, "gap_s": gap, "delay_s": delay, "poll_only": poll_only, "p50_ms": ms[len(ms) // 2], "p95_ms": ms[int(len(ms) * 0.95)]}


def _enqueue_singles(url: str, n: int, window: float | None, start, out) -> None:
    if window is not None:
        from jobq_core.store.postgres.notify import Notifier
        Notifier.EVERY = window
    with Queue(url) as q:
        start.wait()
        t0 = time.perf_counter()
        for i in range(n):
            q.enqueue("noop", {"i": i})
        out.put(time.perf_counter() - t0)


def burst(url: str, n: int, processes: int, window: float | None) -> dict:
    """``n`` single enqueues split over ``processes`` processes (spawned: none shares a
    connection), and how many notifications a listener received meanwhile."""
    import multiprocessing
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_enqueue_singles, args=(url, n // processes, window, start, out))
             for _ in range(processes)]
    for p in procs:
        p.start()
    with psycopg.connect(url, autocommit=True) as listener:
        listener.execute("LISTEN jobq")
        time.sleep(2.0)  # every process has opened its queue
        t0 = time.perf_counter()
        start.set()
        seconds = [out.get(timeout=600) for _ in procs]
        wall = time.perf_counter() - t0
        for p in procs:
            p.join()
        notes = sum(1 for _ in listener.notifies(timeout=0.5))
    jobs = n // processes * processes
    return {"jobs": jobs, "processes": processes, "window_s": window, "rate": jobs / wall,
            "notifications": notes, "slowest_s": max(seconds)}


def claims_with_pending(url: str, pending: int, queues: int, claims: int = 3000) -> float:
    with psycopg.connect(url, autocommit=True) as c:
        c.execute(
            "INSERT INTO jobq_jobs(kind, queue, payload, max_attempts, run_at, created_at) "
            "SELECT 'noop', 'q' || (i %% %s), '{}', 20, extract(epoch FROM now()) - 60, 0 "
            "FROM generate_series(1, %s) i", (queues, pending))
        c.execute("VACUUM ANALYZE jobq_jobs")
    with Queue(url) as q:
        started = time.perf_counter()
        for _ in range(claims):
            job = q.claim("scale")
            q.complete(job.id, job.token)
        return claims / (time.perf_counter() - started)


def limits(server_url: str, n: int, chunk: int = 500) -> dict:
    with Database(server_url) as none, Database(server_url) as other, \
            Database(server_url) as own:
        with Queue(other.url) as q:
            q.set_limit("fragile", concurrency=1, rate="10/s")
        with Queue(own.url) as q:
            q.set_limit("default", concurrency=n + 1)
        for db in (none, other, own):
            fill(db.url, n)
        queues = [Queue(db.url) for db in (none, other, own)]
        seconds = [0.0, 0.0, 0.0]
        try:
            for _ in range(0, n, chunk):
                for k, q in enumerate(queues):
                    started = time.perf_counter()
                    for _ in range(chunk):
                        job = q.claim("limits")
                        q.complete(job.id, job.token)
                    seconds[k] += time.perf_counter() - started
            assert all(q.count("succeeded") == n for q in queues)
        finally:
            for q in queues:
                q.close()
    rates = [n / t for t in seconds]
    return {"none": rates[0], "other_limited": rates[1], "own_limited": rates[2],
            "ratio": rates[1] / rates[0], "ratio_own": rates[2] / rates[0]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    p.add_argument("--n", type=int, default=5000)
    p.add_argument("--bloat-jobs", type=int, default=100000)
    p.add_argument("--sample", type=float, default=5.0)
    p.add_argument("--prune-every", type=float, default=0.0,
                   help="during the bloat drain, prune jobs finished over this many seconds "
                        "ago every this many seconds (what an operator's cron would do)")
    p.add_argument("--steady", type=float, default=0.0)
    p.add_argument("--latency", type=int, default=0)
    p.add_argument("--scale", action="store_true")
    p.add_argument("--limits", action="store_true")
    p.add_argument("--gap", type=float, default=0.15)
    p.add_argument("--delay", type=float, default=0.0,
                   help="--latency jobs are enqueued with this delay; the figures are then "
                        "how late they start after their run_at")
    p.add_argument("--poll-only", action="store_true", help="the latency worker polls only")
    p.add_argument("--backlog", type=int, default=5000)
    p.add_argument("--burst", type=int, default=0)
    p.add_argument("--notify-window", type=float, default=None,
                   help="the notification limiter's window in seconds (--burst, --latency)")
    p.add_argument("--skip-rates", action="store_true")
    p.add_argument("--json")
    args = p.parse_args()
    if args.notify_window is not None:
        from jobq_core.store.postgres.notify import Notifier
        Notifier.EVERY = args.notify_window
    with psycopg.connect(args.url) as c:
        settings = dict(c.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN ('server_version', 'fsync', "
            "'synchronous_commit', 'shared_buffers', 'autovacuum')").fetchall())
    report = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
              "python": platform.python_version(), "psycopg": psycopg.__version__,
              "server": settings, "n": args.n, "rates": {}}
    print(f"server {settings}")
    for name, fn in (("raw-1", raw_one), ("api-1", api_one), ("worker", worker_drain),
                     ("raw-batch", raw_batch), ("batch", api_batch)):
        if args.skip_rates:
            break
        with Database(args.url) as db:
            rate = fn(db.url, args.n)
        report["rates"][name] = rate
        print(f"{name:10} {rate:9.0f} jobs/s", flush=True)
    r = report["rates"]
    if r:
        report["ratios"] = {"api-1/raw-1": r["api-1"] / r["raw-1"],
                            "worker/raw-1": r["worker"] / r["raw-1"],
                            "batch/raw-batch": r["batch"] / r["raw-batch"]}
        print(" ".join(f"{k}={v:.2f}" for k, v in report["ratios"].items()))
    if args.scale:
        report["scale"] = {}
        for queues in (1, 4):
            for pending in (10_000, 1_000_000, 10_000):
                with Database(args.url) as db:
                    rate = claims_with_pending(db.url, pending, queues)
                report["scale"].setdefault(f"{queues} queues", {}).setdefault(
                    str(pending), []).append(rate)
                print(f"claims with {pending:,} pending in {queues} queue(s): {rate:.0f}/s",
                      flush=True)
    if args.burst:
        report["burst"] = []
        for processes in (1, 4):
            with Database(args.url) as db:
                row = burst(db.url, args.burst, processes, args.notify_window)
            report["burst"].append(row)
            print(f"burst {row}", flush=True)
    if args.limits:
        report["limits"] = limits(args.url, args.n)
        print("limits " + " ".join(f"{k}={v:.2f}" for k, v in report["limits"].items()))
    if args.latency:
        with Database(args.url) as db:
            report["latency"] = latency(db.url, args.latency, args.gap, args.poll_only,
                                        args.delay)
        print(f"enqueue-to-start {report['latency']}")
    if args.steady:
        with Database(args.url) as db:
            report["steady"] = steady(db.url, args.steady, args.backlog, args.sample)
    if args.bloat_jobs:
        samples = []
        with Database(args.url) as db:
            def sample(stop):
                t0 = time.perf_counter()
                while True:
                    with Queue(db.url) as q:
                        left = q.count("pending")
                    samples.append({"t": round(time.perf_counter() - t0, 1), "pending": left,
                                    **sizes(db.url)})
                    print(f"  {samples[-1]}", flush=True)
                    if stop.wait(args.sample):
                        break
            pruner = None
            if args.prune_every:
                done = threading.Event()

                def prune_while_draining():
                    with Queue(db.url) as q:
                        while not done.wait(args.prune_every):
                            q.prune(args.prune_every)

                pruner = threading.Thread(target=prune_while_draining, daemon=True)
                pruner.start()
            rate = worker_drain(db.url, args.bloat_jobs, sample=sample,
                                pruned=bool(args.prune_every))
            if pruner:
                done.set()
                pruner.join(60)
            samples.append({"t": "end", "pending": 0, **sizes(db.url)})
            print(f"  {samples[-1]}")
        report["bloat"] = {"jobs": args.bloat_jobs, "rate": rate,
                           "prune_every": args.prune_every, "samples": samples}
        print(f"bloat drain {rate:.0f} jobs/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
