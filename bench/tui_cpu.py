"""The monitor's CPU use, idle and during a drain (a benchmark, not a test).

    python bench/tui_cpu.py [--seconds 30] [--sizes 80x24,200x50] [--views 1234567]
                            [--no-drain] [--pg postgresql://postgres@127.0.0.1/test]
                            [--json FILE]

Runs the real ``jobq-tui`` in a pseudo-terminal, refresh every second, on a database like
a live one (finished jobs over the last hour for the sparklines, pending, scheduled and
retrying jobs, dead jobs in groups, two schedules, 40 running jobs whose lease countdowns
tick every second, two live workers beating every 10 s and extending those leases). What is measured is the monitor process's CPU time
(user + system, all its threads, from ``/proc/PID/stat``) over ``--seconds``, as % of one
core, not wall-clock time; each view is shown for 3 s before its measurement starts (its
first read and draw are not counted).

* idle: every view (1-7) at every size, no job moving (only the workers' beats);
* drain: every view at every size while a worker process (``jobq run``, no-op jobs,
  concurrency 8) drains jobs that a feeder in this process keeps topping up, so the drain
  never runs dry mid-case; jobs finished over a minute before are pruned between cases;
  the worker's rate is reported beside each figure.

With ``--pg URL`` the database is a new one on that PostgreSQL server (created, and dropped
at the end); without it, an SQLite file in a temporary directory.

Targets (issue 12): at most 1 % of a core in every view while nothing changes, at most
3 % during a drain of thousands of jobs per second. Other load on the machine moves the
figures little (CPU time is measured, not wall time), but run it on a quiet machine: the
clock tick is 10 ms, so a 30 s case reads to about 0.03 %.
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
import threading
import time
import uuid
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

from jobq_core import Queue, Registry
from jobq_core.testing import FakeClock

VIEWS = {"1": "Running", "2": "Queues", "3": "Workers", "4": "Retries", "5": "Dead", "6": "All",
         "7": "Schedules"}
NOOP = "bench.noop"


def build(path: str) -> None:
    """A database as a live queue has it: an hour of history, every state, two schedules
    (``Workers`` adds the running jobs and their workers)."""
    now = time.time()
    clock = FakeClock(now - 3600)
    with Queue(path, clock=clock, max_attempts=3) as q:
        for minute in range(60):
            ids = q.enqueue_many([{"kind": "send_receipt", "queue": "mail", "payload": {"n": i}}
                                  for i in range(30)])
            jobs = q.claim_many("w-old", len(ids))
            q.complete_many([(j.id, j.token, None) for j in jobs[:-1]])
            q.fail(jobs[-1].id, jobs[-1].token, f"RuntimeError: HTTP 502 for INV-{minute}",
                   retry_in=99999)
            clock.advance(60)
        clock.set(now - 600)  # ten minutes of lag: the lag moves once a minute
        q.enqueue_many([{"kind": "report", "queue": "export"}] * 240)
        clock.set(now)
        q.enqueue_many([{"kind": "digest", "queue": "mail", "delay": 3600}] * 50)
        r = Registry()
        q.register_schedule(r.periodic("refresh_rates", every=300, queue="mail"), since=now)
        q.register_schedule(r.periodic("nightly_report", cron="0 3 * * *"), since=now)


class Workers(threading.Thread):
    """Two workers holding 40 running jobs, beating as real ones do: every 10 s each
    records its beat and extends its jobs' 30 s leases (so the database changes every
    few seconds even while no job moves, and the lease countdowns tick)."""

    BEAT, LEASE = 10.0, 30.0

    def __init__(self, path: str):
        super().__init__(daemon=True)
        self.path = path
        self.stop = threading.Event()
        with Queue(path) as q:
            for w in ("w1", "w2"):
                q.register_worker(w, host="app", pid=os.getpid(), queues=None,
                                  concurrency=32, beat_interval=self.BEAT, lease=self.LEASE)
            self.held = {w: q.claim_many(w, 20, lease=self.LEASE, queues=["export"])
                         for w in ("w1", "w2")}

    def run(self) -> None:
        with Queue(self.path) as q:
            while not self.stop.wait(self.BEAT):
                for w, jobs in self.held.items():
                    q.extend_many([(j.id, j.token) for j in jobs], lease=self.LEASE)
                    q.beat_worker(w, busy=len(jobs))


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
        """CPU seconds the process has used so far (user + system, every thread)."""
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


def sizes(text: str) -> list[tuple[int, int]]:
    return [tuple(int(n) for n in s.split("x")) for s in text.split(",")]


def idle(path: str, seconds: float, views: str, shapes) -> dict[str, float]:
    out = {}
    for cols, rows in shapes:
        m = Monitor(path, cols, rows)
        try:
            for key in views:
                m.press(key)
                out[f"idle {VIEWS[key]} {cols}x{rows}"] = pct = m.measure(seconds)
                print(f"  idle  {VIEWS[key]:9} {cols}x{rows}: {pct:5.2f} % of one core",
                      flush=True)
        finally:
            m.close()
    return out


class Feeder(threading.Thread):
    """Keeps at least ``low`` no-op jobs pending while the worker drains them."""

    def __init__(self, path: str, low: int = 40_000, batch: int = 20_000):
        super().__init__(daemon=True)
        self.path, self.low, self.batch = path, low, batch
        self.stop = threading.Event()
        self.fed = 0

    def run(self) -> None:
        with Queue(self.path) as q:
            while not self.stop.is_set():
                if q.count("pending", "default") < self.low:
                    q.enqueue_many([(NOOP, None)] * self.batch)
                    self.fed += self.batch
                else:
                    self.stop.wait(0.2)


def succeeded(path: str) -> int:
    with Queue(path) as q:
        return q.count("succeeded")


def drain(path: str, seconds: float, views: str, shapes) -> dict[str, float]:
    out = {}
    feeder = Feeder(path)
    with Queue(path) as q:
        q.enqueue_many([(NOOP, None)] * feeder.low)
    feeder.start()
    worker = subprocess.Popen(
        [sys.executable, "-m", "jobq_cli.main", "run", "--app", "jobq_cli.bench_tasks",
         "--db", path, "--queue", "default", "--concurrency", "8", "--log-level", "WARNING"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(2)  # the worker starts
        for cols, rows in shapes:
            m = Monitor(path, cols, rows)
            try:
                for key in views:
                    with Queue(path) as q:  # the table stays the size of a minute's work
                        q.prune(60, dead=False)
                    m.press(key)
                    done0, t0 = succeeded(path), time.monotonic()
                    pct = m.measure(seconds)
                    rate = (succeeded(path) - done0) / (time.monotonic() - t0)
                    name = f"drain {VIEWS[key]} {cols}x{rows}"
                    out[name], out[f"{name} jobs/s"] = pct, rate
                    print(f"  drain {VIEWS[key]:9} {cols}x{rows}: {pct:5.2f} % of one core "
                          f"while the worker ran {rate:,.0f} jobs/s", flush=True)
            finally:
                m.close()
    finally:
        feeder.stop.set()
        feeder.join()
        worker.terminate()
        worker.wait(30)
    return out


@contextmanager
def database(pg: str | None):
    """A path or URL for a fresh database (a new one on the server ``pg``, dropped after)."""
    if pg is None:
        with tempfile.TemporaryDirectory() as tmp:
            yield os.path.join(tmp, "jobs.db")
        return
    import psycopg

    name = f"jobq_tui_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(pg)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(pg, autocommit=True) as c:
            c.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=30.0, help="measured per case")
    p.add_argument("--views", default="".join(VIEWS), help="view keys, default 1234567")
    p.add_argument("--sizes", type=sizes, default=sizes("80x24,200x50"))
    p.add_argument("--no-drain", action="store_true", help="idle cases only")
    p.add_argument("--no-idle", action="store_true", help="drain cases only")
    p.add_argument("--pg", metavar="URL", help="a PostgreSQL server to create the database on")
    p.add_argument("--json", help="also write the results to this file")
    args = p.parse_args()
    store = "PostgreSQL" if args.pg else "SQLite"
    results: dict[str, float] = {}
    with database(args.pg) as path:
        build(path)
        workers = Workers(path)
        workers.start()
        try:
            print(f"jobq-tui on {store}, refresh 1 s, {args.seconds:g} s a case "
                  "(CPU time of its process)", flush=True)
            if not args.no_idle:
                results |= idle(path, args.seconds, args.views, args.sizes)
            if not args.no_drain:
                results |= drain(path, args.seconds, args.views, args.sizes)
        finally:
            workers.stop.set()
            workers.join()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"store": store, "seconds": args.seconds, "results": results}, f,
                      indent=2)


if __name__ == "__main__":
    main()
