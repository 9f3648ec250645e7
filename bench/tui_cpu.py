"""The monitor's CPU use, idle and during a drain (a benchmark, not a test).

    python bench/tui_cpu.py [--seconds 30] [--drain-jobs 200000] [--json FILE]

Runs the real ``jobq-tui`` in a pseudo-terminal, refresh every second, on a database like
a live one (finished jobs over the last hour for the sparklines, pending, scheduled and
retrying jobs, 40 running jobs whose lease countdowns tick every second, live workers):

* idle: each view (1-6) at 80x24 and at 200x50, nothing changing in the database; the
  process's CPU time (user + system, from /proc) over ``--seconds``, as % of one core;
* drain: the All view and the Running view at 80x24 while a worker process (``jobq
  run``, no-op jobs, concurrency 8) drains ``--drain-jobs`` jobs; the worker's rate is
  reported beside it.

Targets (issue 12): at most 1 % of a core in every view while nothing changes, at most
3 % during a drain of thousands of jobs per second. The machine's other load moves the
numbers little (CPU time, not wall time, is measured), but run it on a quiet machine.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import tempfile
import termios
import time

from jobq_core import Queue
from jobq_core.testing import FakeClock

VIEWS = {"1": "Running", "2": "Queues", "3": "Workers", "4": "Retries", "5": "Dead", "6": "All"}
NOOP = "bench.noop"


def build(path: str) -> None:
    """A database as a live queue has it: an hour of history, every state, 40 running
    jobs under workers that keep beating (see ``keep_alive``)."""
    now = time.time()
    clock = FakeClock(now - 3600)
    with Queue(path, clock=clock, max_attempts=3) as q:
        for minute in range(60):
            ids = q.enqueue_many([{"kind": "send_receipt", "queue": "mail", "payload": {"n": i}}
                                  for i in range(30)])
            jobs = q.claim_many("w-old", len(ids))
            q.complete_many([(j.id, j.token, None) for j in jobs[:-1]])
            q.fail(jobs[-1].id, jobs[-1].token, f"RuntimeError: HTTP 502 for INV-{minute}",
                   retry_in=0 if minute % 2 else 99999)
            clock.advance(60)
        clock.set(now)
        q.enqueue_many([{"kind": "digest", "queue": "mail", "delay": 3600}] * 50)
        q.enqueue_many([{"kind": "report", "queue": "export"}] * 200)


def keep_alive(path: str) -> tuple[Queue, list]:
    """Two workers holding 40 running jobs with long leases (the countdowns tick)."""
    q = Queue(path)
    for w in ("w1", "w2"):
        q.register_worker(w, host="app", pid=os.getpid(), queues=None, concurrency=32,
                          beat_interval=3600, lease=3600)
    held = q.claim_many("w1", 20, lease=3000) + q.claim_many("w2", 20, lease=3000)
    return q, held


class Monitor:
    """``jobq-tui`` in a pseudo-terminal of the given size; its output is read and thrown
    away as a terminal would draw it."""

    def __init__(self, path: str, cols: int, rows: int):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.environ["TERM"] = "xterm-256color"
            os.execv(sys.executable, [sys.executable, "-m", "jobq_tui.main", path,
                                      "--read-only", "--interval", "1"])
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.read(4)  # start-up and the first reads

    def read(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if select.select([self.fd], [], [], 0.2)[0]:
                try:
                    os.read(self.fd, 1 << 16)
                except OSError:
                    return

    def press(self, key: str) -> None:
        os.write(self.fd, key.encode())
        self.read(3)  # the view's first read and draw, not counted

    def cpu(self) -> float:
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def measure(self, seconds: float) -> float:
        c0, t0 = self.cpu(), time.monotonic()
        self.read(seconds)
        return (self.cpu() - c0) / (time.monotonic() - t0) * 100

    def close(self) -> None:
        os.write(self.fd, b"q")
        self.read(1)
        try:
            os.kill(self.pid, 15)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)


def idle(path: str, seconds: float) -> dict[str, float]:
    out = {}
    for cols, rows in ((80, 24), (200, 50)):
        m = Monitor(path, cols, rows)
        try:
            for key, view in VIEWS.items():
                m.press(key)
                out[f"{view} {cols}x{rows}"] = pct = m.measure(seconds)
                print(f"  idle  {view:8} {cols}x{rows}: {pct:5.2f} % of one core", flush=True)
        finally:
            m.close()
    return out


def drain(path: str, seconds: float, jobs: int) -> dict[str, float]:
    out = {}
    for key in ("6", "1"):
        with Queue(path) as q:
            for start in range(0, jobs, 10_000):
                q.enqueue_many([(NOOP, None)] * min(10_000, jobs - start))
            before = q.stats(window=3600).succeeded_recent
        m = Monitor(path, 80, 24)
        try:
            m.press(key)
            worker = subprocess.Popen(
                [sys.executable, "-m", "jobq_cli.main", "run", "--app", "jobq_cli.bench_tasks",
                 "--db", path, "--concurrency", "8", "--log-level", "WARNING"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            m.read(2)  # the worker starts
            t0 = time.monotonic()
            with Queue(path) as q:
                done0 = q.stats(window=3600).succeeded_recent
                pct = m.measure(seconds)
                rate = (q.stats(window=3600).succeeded_recent - done0) / (time.monotonic() - t0)
            worker.terminate()
            worker.wait(30)
        finally:
            m.close()
        view = VIEWS[key]
        out[f"{view} 80x24 drain"] = pct
        out[f"{view} 80x24 drain jobs/s"] = rate
        print(f"  drain {view:8} 80x24: {pct:5.2f} % of one core while the worker ran "
              f"{rate:,.0f} jobs/s ({before:,} finished before)", flush=True)
        with Queue(path) as q:
            q.prune(0)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=30.0, help="measured per case")
    p.add_argument("--drain-jobs", type=int, default=200_000)
    p.add_argument("--json", help="also write the results to this file")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "jobs.db")
        build(path)
        q, held = keep_alive(path)
        try:
            print(f"jobq-tui, refresh 1 s, {args.seconds:g} s a case (CPU time of its process)")
            results = idle(path, args.seconds)
            if args.drain_jobs:
                results |= drain(path, args.seconds, args.drain_jobs)
        finally:
            q.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seconds": args.seconds, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
