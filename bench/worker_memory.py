"""Does a worker's memory stay flat over a long drain? (A benchmark, not a test.)

    python bench/worker_memory.py [--jobs 1000000] [--db PATH]

Enqueues ``--jobs`` no-op jobs (in batches of 10,000), then drains them with one
``Worker(queue, registry).run(burst=True)`` at the default settings, in this process. A
sampling thread reads the resident set size (``/proc/self/statm``) and the count of
finished handlers every second. Prints RSS at each tenth of the drain and the growth
from the first tenth to the end; ``--json`` writes the samples.

Target: flat (growth within a few MiB: SQLite's page cache and the allocator's arenas
settle in the first seconds).
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time

from jobq_core import Queue, Registry, Worker

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--db", help="database file (default: a temporary one)")
    parser.add_argument("--json", help="write the samples here")
    args = parser.parse_args()
    path = args.db or os.path.join(tempfile.mkdtemp(prefix="jobq-mem-"), "jobs.db")

    q = Queue(path)
    started = time.perf_counter()
    for start in range(0, args.jobs, 10_000):
        q.enqueue_many([("noop", {"i": i}) for i in range(start, min(start + 10_000, args.jobs))])
    print(f"enqueued {args.jobs:,} jobs in {time.perf_counter() - started:.1f}s; "
          f"RSS {rss_mib():.1f} MiB")

    done = [0]
    registry = Registry()

    @registry.task("noop")
    def noop(payload):
        done[0] += 1

    samples: list[tuple[float, int, float]] = []
    stop = threading.Event()

    def sample() -> None:
        t0 = time.perf_counter()
        while not stop.wait(1.0):
            samples.append((time.perf_counter() - t0, done[0], rss_mib()))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    Worker(q, registry).run(burst=True, handle_signals=False)
    took = time.perf_counter() - started
    stop.set()
    sampler.join()
    samples.append((took, done[0], rss_mib()))
    left = q.count(status="pending") + q.count(status="running")
    q.close()

    print(f"drained {done[0]:,} jobs in {took:.1f}s ({done[0] / took:,.0f} jobs/s), "
          f"{left} left")
    print(f"{'jobs done':>12} {'RSS MiB':>8}")
    shown = set()
    for _, n, rss in samples:
        tenth = n * 10 // max(1, args.jobs)
        if tenth not in shown:
            shown.add(tenth)
            print(f"{n:>12,} {rss:>8.1f}")
    first = next(rss for _, n, rss in samples if n >= args.jobs // 10)
    peak = max(rss for _, _, rss in samples)
    print(f"RSS after the first tenth {first:.1f} MiB, at the end {samples[-1][2]:.1f} MiB, "
          f"peak {peak:.1f} MiB: growth {samples[-1][2] - first:+.1f} MiB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"jobs": args.jobs, "seconds": took, "left": left,
                       "samples": [{"t": t, "done": n, "rss_mib": r} for t, n, r in samples]},
                      f, indent=1)


if __name__ == "__main__":
    main()
