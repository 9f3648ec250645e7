#!/usr/bin/env python3
"""wait_latency.py - how soon ``Queue.wait`` returns after a job's completion commits.

On each store (a fresh SQLite file; a new database of the PostgreSQL server given by
--pg-url), with a Worker process draining no-op jobs beside it all along (a thread of
its process keeps it fed):

  this process enqueues a job on a queue the Worker does not serve, claims it, and calls
  ``Queue.wait(id)``; a completer process, told the job's id and token, sleeps a random
  5 to 15 ms (the waiter is asleep by then) and completes it through ``Queue.complete``,
  noting the monotonic time just before the call and just after it returned (the commit).

The latency of a sample is the waiter's return minus the commit's return (0 when the
waiter returned first: PostgreSQL may deliver the notification before the completer
hears its commit acknowledged); p50, p99 and the worst, in ms, over --n samples. The
time from just before the completion call is reported too (an upper bound). Also shown:
how many jobs the Worker drained meanwhile, per second.

Usage: python bench/wait_latency.py [--n 400] [--pg-url postgresql://postgres@127.0.0.1/postgres]
       [--no-pg] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from jobq_core import Queue, Registry, Worker  # noqa: E402

PROBE = "probe"  # the waited jobs' queue: the Worker serves "default" only
FEED_EVERY = 0.02  # the feeder enqueues FEED_BATCH no-op jobs this often
FEED_BATCH = 40


def _drain(database: str, ready: mp.Event, stop: mp.Event, counts: mp.Queue) -> None:
    """The Worker draining no-op jobs, fed by a thread; reports how many it completed."""
    registry = Registry()
    registry.task("noop")(lambda payload: None)
    queue = Queue(database)
    feeder = Queue(database)

    def feed() -> None:
        while not stop.is_set():
            if feeder.count("pending", queue="default") < 4 * FEED_BATCH:
                feeder.enqueue_many([("noop", None)] * FEED_BATCH)
            time.sleep(FEED_EVERY)

    feeder.enqueue_many([("noop", None)] * FEED_BATCH)
    threading.Thread(target=feed, daemon=True).start()
    worker = Worker(queue, registry, concurrency=4, queues=["default"], lease=60)
    threading.Thread(target=lambda: (stop.wait(), worker.stop()), daemon=True).start()
    ready.set()
    worker.run(handle_signals=False)
    counts.put(queue.count("succeeded", queue="default"))


def _complete(database: str, jobs: mp.Queue, times: mp.Queue) -> None:
    """Completes each (id, token) it is given after 5-15 ms; sends (before, after)."""
    queue = Queue(database)
    queue.check()
    while (item := jobs.get()) is not None:
        job_id, token = item
        time.sleep(random.uniform(0.005, 0.015))
        before = time.monotonic()
        queue.complete(job_id, token, {"n": job_id})
        times.put((before, time.monotonic()))
    queue.close()


def measure(database: str, n: int) -> dict[str, float]:
    ctx = mp.get_context("spawn")
    ready, stop, counts = ctx.Event(), ctx.Event(), ctx.Queue()
    jobs, times = ctx.Queue(), ctx.Queue()
    queue = Queue(database)
    queue.check()  # tables made before the other processes open the database
    drainer = ctx.Process(target=_drain, args=(database, ready, stop, counts))
    completer = ctx.Process(target=_complete, args=(database, jobs, times))
    drainer.start()
    completer.start()
    ready.wait(60)
    time.sleep(1.0)  # the drain at its pace
    after: list[float] = []
    before: list[float] = []
    started = time.monotonic()
    for _ in range(n):
        job_id = queue.enqueue("probe", queue=PROBE)
        job = queue.claim("bench", queues=[PROBE], lease=60)
        assert job is not None and job.id == job_id and job.token is not None
        jobs.put((job.id, job.token))
        done = queue.wait(job.id, timeout=30)
        returned = time.monotonic()
        assert done.result == {"n": job.id}, done
        t_before, t_after = times.get(timeout=30)
        after.append(max(0.0, returned - t_after) * 1000)
        before.append((returned - t_before) * 1000)
    took = time.monotonic() - started
    jobs.put(None)
    stop.set()
    completer.join(30)
    drained = counts.get(timeout=60)
    drainer.join(30)
    queue.close()
    return {"p50": statistics.median(after), "p99": _pct(after, 0.99), "max": max(after),
            "p50_from_call": statistics.median(before),
            "p99_from_call": _pct(before, 0.99), "drained_per_s": drained / (took + 1.0)}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _pg_database(url: str) -> tuple[str, str]:
    import psycopg

    name = f"jobq_wait_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(url)
    return name, urlunsplit(parts._replace(path="/" + name))


def _pg_drop(url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as c:
        c.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--n", type=int, default=400, help="samples per store")
    ap.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--no-pg", action="store_true")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args()
    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        figures["sqlite"] = measure(os.path.join(tmp, "jobs.db"), args.n)
    if not args.no_pg:
        name, url = _pg_database(args.pg_url)
        try:
            figures["postgresql"] = measure(url, args.n)
        finally:
            _pg_drop(args.pg_url, name)
    print(f"{'store':<11} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}   {'from the call: p50':>18}"
          f" {'p99':>6}   {'drain jobs/s':>12}")
    for store, f in figures.items():
        print(f"{store:<11} {f['p50']:7.2f} {f['p99']:7.2f} {f['max']:7.2f}   "
              f"{f['p50_from_call']:18.2f} {f['p99_from_call']:6.2f}   {f['drained_per_s']:12.0f}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)


if __name__ == "__main__":
    main()
