"""A real worker process for the chaos scenarios: jobq's Worker on an ObservedQueue.

    python chaos_worker.py DB HISTORY [--concurrency N] [--lease S] [--grace S]
                           [--clock-offset S] [--host-clock-offset S] [--burst]
                           [--pool thread|process]

Handlers (kind -> behaviour): "work" sleeps payload["ms"] milliseconds, heartbeating;
"raise" raises; "exit" calls sys.exit; "nonjson" returns something JSON cannot hold;
"spin" busy-loops; "hang" sleeps forever (the last two have a 1 s timeout).
SIGUSR1 lifts this process's file-size limit ("disk space returns").

The registry is a module-level name, so that the children of ``--pool process`` can import
it (as ``__main__:registry``, this script run again by path); each process writes its own
"ran" events to the history log named by $CHAOS_HISTORY.
"""
from __future__ import annotations

import argparse
import logging
import os
import resource
import signal
import sys
import time

from history import HistoryWriter
from observed_queue import ObservedQueue

from jobq_core import Backoff, Registry, Worker
from jobq_core.clock import SystemClock


class OffsetClock(SystemClock):
    """A wall clock ``offset`` seconds off, as a skewed machine's would be, that jumps by
    ``jump`` seconds ``jump_after`` seconds after it was made (an NTP step, a VM resume)."""

    def __init__(self, offset: float, jump: float = 0.0, jump_after: float = 0.0):
        self.offset = offset
        self.jump = jump
        self.jump_at = time.monotonic() + jump_after

    def now(self) -> float:
        jumped = self.jump if self.jump and time.monotonic() >= self.jump_at else 0.0
        return time.time() + self.offset + jumped


_history: HistoryWriter | None = None


def history() -> HistoryWriter:
    """This process's writer to the history log (a child process opens its own)."""
    global _history
    if _history is None or _history.pid != os.getpid():
        _history = HistoryWriter(os.environ["CHAOS_HISTORY"])
    return _history


def build_registry() -> Registry:
    registry = Registry()

    @registry.task("work", max_attempts=50)
    def work(payload, ctx):
        end = time.monotonic() + payload.get("ms", 5) / 1000
        while time.monotonic() < end and not ctx.cancelled.is_set():
            time.sleep(min(0.01, max(0.0, end - time.monotonic())))
        history().write("ran", job=ctx.job_id, attempt=ctx.attempt)
        return {"job": ctx.job_id, "pid": os.getpid()}

    @registry.task("raise", max_attempts=2)
    def fails(payload):
        raise ValueError(f"handler failed on purpose: {payload}")

    @registry.task("exit", max_attempts=1)
    def exits(payload):
        sys.exit(3)

    @registry.task("nonjson", max_attempts=1)
    def nonjson(payload):
        return {"not json": object()}

    @registry.task("spin", max_attempts=1, timeout=1.0)
    def spin(payload, ctx):
        while not ctx.cancelled.is_set():
            pass

    @registry.task("hang", max_attempts=1, timeout=1.0)
    def hang(payload):
        time.sleep(3600)

    return registry


registry = build_registry()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("db")
    p.add_argument("history")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--lease", type=float, default=1.0)
    p.add_argument("--grace", type=float, default=5.0)
    p.add_argument("--clock-offset", type=float, default=0.0)
    p.add_argument("--clock-jump", type=float, default=0.0)
    p.add_argument("--clock-jump-after", type=float, default=0.0)
    p.add_argument("--host-clock-offset", type=float, default=0.0,
                   help="fake this host's wall clock (time.time) this many seconds off; "
                        "the queue keeps its own clock (PostgreSQL: the server's)")
    p.add_argument("--burst", action="store_true")
    p.add_argument("--pool", default="thread")
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING, format=f"[{os.getpid()}] %(message)s")
    signal.signal(signal.SIGUSR1, lambda *_: resource.setrlimit(
        resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY)))
    os.environ["CHAOS_HISTORY"] = args.history  # for this process's children too
    if args.host_clock_offset:
        real = time.time
        time.time = lambda: real() + args.host_clock_offset
    # An injected clock only for the skew scenarios; else the queue's own (on PostgreSQL
    # the server's, on SQLite this host's).
    skewed = args.clock_offset or args.clock_jump
    clock = OffsetClock(args.clock_offset, args.clock_jump, args.clock_jump_after) if skewed else None
    queue = ObservedQueue(args.db, history(), clock=clock, backoff=Backoff(base=0.05, cap=0.5))
    # Poison detection off: these scenarios kill workers at random, and a job that loses
    # three in a row (or is frozen once, then loses two) must still run to its end.
    worker = Worker(queue, registry, concurrency=args.concurrency,
                    lease=args.lease, grace=args.grace, poll_interval=0.01, pool=args.pool,
                    max_lost_attempts=0)
    history().write("worker", id=worker.id)
    worker.run(burst=args.burst)
    queue.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
