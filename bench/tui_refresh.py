"""Benchmark of the jobq monitor on a large database (not a test).

    python bench/tui_refresh.py [--db PATH] [--jobs 1000000] [--idle-seconds 60]

Builds (once; reused when PATH exists) a database with ``--jobs`` jobs, almost all
finished — succeeded over the last day, ~2 % dead — plus pending, scheduled, retrying
and running jobs and a few workers. Then reports:

* one refresh, read side: ``Source.poll`` with ``force=True`` (every query of the view
  runs), per view, median and worst of 20; and the unchanged-database path;
* one refresh, whole app: a headless app at 200x50, from asking for a poll to the
  rendered rows, median of 20 (forced reads);
* the CPU the real app uses at idle: ``jobq-tui PATH`` in a pseudo-terminal at 200x50,
  refresh every second, process CPU time over ``--idle-seconds``; once with nothing
  running, once with 50 running jobs whose lease countdowns tick every second.

Targets: a refresh under 50 ms; idle CPU under 3 % of one core.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import pty
import select
import statistics
import struct
import sys
import time

from jobq_core import Queue
from jobq_core.testing import FakeClock
from jobq_tui.filters import Filter
from jobq_tui.source import Source
from jobq_tui.views import VIEWS

BATCH = 10_000


def build(path: str, jobs: int) -> None:
    now = time.time()
    clock = FakeClock(now - 86_400)
    t0 = time.monotonic()
    q = Queue(path, clock=clock, synchronous="OFF", max_attempts=1)
    finished = jobs - 5_900  # the rest: pending, scheduled, retrying below
    step = 86_400 / max(1, finished)
    kinds = ["send_receipt", "build_report", "resize", "sync_crm", "digest"]
    queues = ["mail", "export", "media", "crm", "default"]
    done = 0
    while done < finished:
        n = min(BATCH, finished - done)
        q.enqueue_many([{"kind": kinds[i % 5], "queue": queues[i % 5],
                         "payload": {"n": done + i, "to": "user@example.com"}}
                        for i in range(n)])
        claimed = q.claim_many("bench-old", n, lease=3600)
        ok = [(j.id, j.token, {"ok": True}) for j in claimed if j.id % 50]
        q.complete_many(ok)
        for j in claimed:
            if not j.id % 50:
                q.fail(j.id, j.token, f"KeyError: 'customer_{j.id % 7}'\nTraceback ...")
        done += n
        clock.advance(step * n)
        if done % 100_000 < BATCH:
            print(f"  built {done:,} finished jobs ({time.monotonic() - t0:.0f} s)", flush=True)
    clock.set(now)
    q.enqueue_many([{"kind": kinds[i % 5], "queue": queues[i % 5], "payload": {"i": i}}
                    for i in range(5_000)])
    q.enqueue_many([{"kind": "digest", "queue": "mail", "delay": 3600} for _ in range(400)])
    q.max_attempts = 5
    q.enqueue_many([{"kind": "sync_crm", "queue": "crm", "max_attempts": 5}
                    for _ in range(500)])
    for j in q.claim_many("w-flaky", 500, queues=["crm"]):
        q.fail(j.id, j.token, "TimeoutError: CRM did not answer", retry_in=600)
    for w in range(8):
        q.register_worker(f"w{w}", host=f"app-{w}", pid=1000 + w, queues=None, concurrency=8)
    q.close()
    print(f"built {path} in {time.monotonic() - t0:.0f} s "
          f"({os.path.getsize(path) / 1e6:.0f} MB)", flush=True)


def bench_source(path: str) -> None:
    s = Source(path, read_only=True)
    s.open()
    print("\nread side, Source.poll(force=True), ms (median / worst of 20):")
    for view in VIEWS:
        for grouped in ((True, False) if view == "dead" else (True,)):
            times = []
            for _ in range(20):
                t = time.perf_counter()
                s.poll(VIEWS[view], Filter(), grouped=grouped, force=True)
                times.append((time.perf_counter() - t) * 1000)
            name = view + ("" if view != "dead" else (" (grouped)" if grouped else " (jobs)"))
            print(f"  {name:16} {statistics.median(times):6.1f} / {max(times):6.1f}")
    times = []
    for _ in range(200):
        t = time.perf_counter()
        s.poll(VIEWS["running"], Filter())
        times.append((time.perf_counter() - t) * 1000)
    print(f"  unchanged db     {statistics.median(times):6.2f} / {max(times):6.2f}"
          "   (data_version check only)")
    s.close()


def bench_app(path: str) -> None:
    from jobq_tui.app import MonitorApp

    async def run() -> list[float]:
        s = Source(path, read_only=True)
        s.open()
        app = MonitorApp(s, interval=3600)
        times = []
        async with app.run_test(size=(200, 50)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            for view_key in ("1", "6", "5"):
                await pilot.press(view_key)
                await app.workers.wait_for_complete()
                await pilot.pause()
                for _ in range(7):
                    t = time.perf_counter()
                    app.request_poll(force=True)
                    while app._polling:
                        await asyncio.sleep(0.001)
                    times.append((time.perf_counter() - t) * 1000)
        s.close()
        return times

    times = asyncio.run(run())
    print(f"\nwhole app at 200x50, forced refresh incl. rendering, ms: "
          f"median {statistics.median(times):.1f}, worst {max(times):.1f}")


def bench_idle(path: str, seconds: float) -> None:
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm-256color"
        os.execv(sys.executable, [sys.executable, "-m", "jobq_tui.main", path,
                                  "--read-only", "--interval", "1"])
    import fcntl
    import termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))

    def drain(for_seconds: float) -> None:
        end = time.monotonic() + for_seconds
        while time.monotonic() < end:
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    os.read(fd, 1 << 16)
                except OSError:
                    return

    def cpu() -> float:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    drain(5)  # start-up and first reads
    c0, t0 = cpu(), time.monotonic()
    drain(seconds)
    c1, t1 = cpu(), time.monotonic()
    os.write(fd, b"q")
    drain(1)
    try:
        os.kill(pid, 15)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    print(f"  CPU of the real app (200x50, 1 s refresh, {t1 - t0:.0f} s): "
          f"{(c1 - c0) / (t1 - t0) * 100:.2f} % of one core")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--db", default="/tmp/jobq_bench_1m.db")
    p.add_argument("--jobs", type=int, default=1_000_000)
    p.add_argument("--idle-seconds", type=float, default=60)
    args = p.parse_args()
    if not os.path.exists(args.db):
        build(args.db, args.jobs)
    with Queue(args.db, read_only=True, create=False) as q:
        st = q.stats()
        print(f"{args.db}: {q.count():,} jobs; pending {st.pending:,}, running {st.running}, "
              f"dead {st.dead:,}, succeeded in the last hour {st.succeeded_recent:,}")
    bench_source(args.db)
    bench_app(args.db)
    if args.idle_seconds > 0:
        print("\nidle: nothing running, nothing changing")
        bench_idle(args.db, args.idle_seconds)
        # 50 running jobs whose lease countdowns tick every second, database unchanged
        with Queue(args.db, create=False) as q:
            held = q.claim_many("bench-idle", 50, lease=3600)
        try:
            print("idle: 50 running jobs, their lease countdowns ticking, database unchanged")
            bench_idle(args.db, args.idle_seconds)
        finally:
            with Queue(args.db, create=False) as q:
                for job in held:
                    q.release(job.id, job.token)


if __name__ == "__main__":
    main()
