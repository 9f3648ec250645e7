"""What the thread pool's hand-off costs a no-op job. (A benchmark, not a test.)

    python bench/handoff.py [--jobs 20000] [--rounds 6]

Drains ``--jobs`` no-op jobs with one ``Worker(queue, registry).run(burst=True)`` on a fresh
SQLite file, in this process, in two ways, alternating round by round:

- ``threads``: the thread pool as shipped: each handler on a ``jobq-handler`` thread, its
  outcome handed back to the completer thread;
- ``inline``: an experiment that no user can pick: the same pool calling each synchronous
  handler on the thread that dispatched it (the completer, or the claim loop), so a job
  never changes threads. It gives up what the thread pool is for (a handler that hangs
  would hang the claims and the writes, and its timeout could not abandon it), and shows
  what the hand-off costs.

Prints each way's drain rate (from ``run``'s start to its end) and context switches per job
(the process's voluntary and involuntary ones, every thread), the medians, and the median of
the rounds' inline/threads ratios.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time

from jobq_core import Queue, Registry, Worker
from jobq_core.worker.threads import ThreadPool


def _inline(self, runs) -> None:
    for run in runs:
        if run.task.is_async:
            raise SystemExit("handoff.py drains synchronous no-op handlers only")
        self._call_sync(run)


def drain(jobs: int, inline: bool) -> tuple[float, float]:
    path = os.path.join(tempfile.mkdtemp(prefix="jobq-handoff-"), "jobs.db")
    queue = Queue(path)
    queue.enqueue_many([("noop", {"i": i}) for i in range(jobs)])
    registry = Registry()
    registry.task("noop")(lambda payload: None)
    shipped = ThreadPool.run
    if inline:
        ThreadPool.run = _inline
    try:
        worker = Worker(queue, registry)
        before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        worker.run(burst=True, handle_signals=False)
        took = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        ThreadPool.run = shipped
    if queue.stats().pending or queue.count(status="succeeded") != jobs:
        raise SystemExit(f"{'inline' if inline else 'threads'}: not every job succeeded once")
    queue.close()
    switches = (after.ru_nvcsw - before.ru_nvcsw) + (after.ru_nivcsw - before.ru_nivcsw)
    return jobs / took, switches / jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    results: dict[str, list[tuple[float, float]]] = {"threads": [], "inline": []}
    for i in range(args.rounds):
        for way in (("threads", "inline") if i % 2 == 0 else ("inline", "threads")):
            rate, switches = drain(args.jobs, way == "inline")
            results[way].append((rate, switches))
            print(f"round {i + 1} {way:8s} {rate:9,.0f} jobs/s  {switches:.2f} switches/job")
    for way, rows in results.items():
        print(f"{way:8s} median {statistics.median(r for r, _ in rows):9,.0f} jobs/s  "
              f"{statistics.median(s for _, s in rows):.2f} switches/job")
    ratios = [i[0] / t[0] for t, i in zip(results["threads"], results["inline"])]
    print(f"inline / threads: median {statistics.median(ratios):.2f}x "
          f"({', '.join(f'{r:.2f}' for r in ratios)})")


if __name__ == "__main__":
    main()
