"""A/B of the monitor's tricks: each case is measured with the trick and without it, in
the same run, alternating (a benchmark, not a test).

    python bench/tui_tricks.py [--tricks gc_freeze] [--seconds 10]
                               [--rounds 2] [--cases idle:1:80x24,drain:6:200x50]
                               [--json FILE]

The monitor runs as ``bench/tui_cpu.py`` runs it (the real ``jobq-tui`` in a
pseudo-terminal, refresh every second, on the same kind of database, with the same
drain), but started through a launcher that can turn one trick off before the app is
imported. What is measured is the monitor process's CPU time (user + system) as % of one
core over ``--seconds``, and, from ``gc.callbacks`` inside the monitor, the CPU time its
garbage collector spent in full (generation 2) passes: how many, their total and the
longest. A case is ``idle`` or ``drain``, a view key, and a size.

Tricks (``off`` is the plain code):

* ``gc_freeze``: ``MonitorApp.on_mount`` moves everything made until the first screen
  update out of the collector's view (``gc.freeze``); off: not called.

(``blank_switcher``, a flag set on the ``ContentSwitcher`` inside ``TabbedContent``, was
measured here and removed: it saved nothing measurable. See this file at ff54f58.)

Run it on a quiet machine; alternate rounds so that drift in the machine's load falls on
both sides.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import tempfile
import termios
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tui_cpu  # noqa: E402  (same directory: the database, the workers, the drain)

from jobq_core import Queue  # noqa: E402

# Runs inside the monitor's process: turn the trick off (if asked), count full GC
# passes, run the monitor, and write the counts when it exits.
LAUNCHER = r"""
import gc, json, sys, time
trick, state, out = sys.argv[1:4]
if state == "off":
    if trick == "gc_freeze":
        gc.freeze = lambda: None
    else:
        raise SystemExit(f"unknown trick {trick!r}")
started = [0.0]
def timing(phase, info):
    if info["generation"] != 2:
        return
    # CPU time of the collecting thread: wall time would count the time the process
    # waited for a core on a busy machine.
    if phase == "start":
        started[0] = time.thread_time()
    else:  # a line per full pass: when it ended (monotonic, as the bench's), its CPU
        with open(out, "a") as f:
            f.write(json.dumps([time.monotonic(), time.thread_time() - started[0]]) + "\n")
gc.callbacks.append(timing)
from jobq_tui.main import main
main(sys.argv[4:])
"""


class Monitor(tui_cpu.Monitor):
    """``tui_cpu.Monitor`` started through ``LAUNCHER``."""

    def __init__(self, path: str, cols: int, rows: int, trick: str, state: str, out: str):
        self.out = out
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.environ["TERM"] = "xterm-256color"
            os.execv(sys.executable, [sys.executable, "-c", LAUNCHER, trick, state, out,
                                      path, "--read-only", "--interval", "1"])
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.read(4)

    def gc_passes(self, start: float, end: float) -> list[float]:
        """How long each full GC pass that ended between ``start`` and ``end`` took."""
        try:
            with open(self.out) as f:
                passes = [json.loads(line) for line in f]
        except FileNotFoundError:
            return []
        return [took for at, took in passes if start <= at <= end]


def case(path: str, kind: str, key: str, cols: int, rows: int, trick: str, state: str,
         seconds: float, tmp: str) -> dict[str, float]:
    if kind == "drain":
        with Queue(path) as q:  # the table stays the size of a minute's work
            q.prune(60, dead=False)
    out = os.path.join(tmp, f"gc-{time.monotonic_ns()}.jsonl")
    m = Monitor(path, cols, rows, trick, state, out)
    try:
        m.press(key)
        done0, t0 = tui_cpu.succeeded(path), time.monotonic()
        pct = m.measure(seconds)
        t1 = time.monotonic()
        rate = (tui_cpu.succeeded(path) - done0) / (t1 - t0)
        passes = m.gc_passes(t0, t1)
    finally:
        m.close()
    return {"cpu_pct": pct, "jobs_per_s": rate, "gc_full_passes": len(passes),
            "gc_full_ms_total": sum(passes) * 1000,
            "gc_full_ms_max": max(passes, default=0.0) * 1000}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tricks", default="gc_freeze")
    p.add_argument("--cases", default="idle:1:80x24,drain:6:200x50",
                   help="kind:view key:size, comma-separated")
    p.add_argument("--seconds", type=float, default=10.0, help="measured per case")
    p.add_argument("--rounds", type=int, default=2, help="on/off pairs per case")
    p.add_argument("--json", help="also write the results to this file")
    args = p.parse_args()
    cases = []
    for spec in args.cases.split(","):
        kind, key, size = spec.split(":")
        cols, rows = tui_cpu.sizes(size)[0]
        cases.append((kind, key, cols, rows))
    results: list[dict] = []
    with tui_cpu.database(None) as path, tempfile.TemporaryDirectory() as tmp:
        tui_cpu.build(path)
        workers = tui_cpu.Workers(path)
        workers.start()
        feeder = worker = None
        try:
            print(f"jobq-tui on SQLite, refresh 1 s, {args.seconds:g} s a case, "
                  f"{args.rounds} on/off pairs, alternating", flush=True)
            for kind, key, cols, rows in sorted(cases, key=lambda c: c[0] == "drain"):
                if kind == "drain" and feeder is None:
                    feeder = tui_cpu.Feeder(path)
                    with Queue(path) as q:
                        q.enqueue_many([(tui_cpu.NOOP, None)] * feeder.low)
                    feeder.start()
                    worker = subprocess.Popen(
                        [sys.executable, "-m", "jobq_cli.main", "run", "--app",
                         "jobq_cli.bench_tasks", "--db", path, "--queue", "default",
                         "--concurrency", "8", "--log-level", "WARNING"],
                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
                    time.sleep(2)
                for trick in args.tricks.split(","):
                    for r in range(args.rounds):
                        order = ("on", "off") if r % 2 == 0 else ("off", "on")
                        for state in order:
                            got = case(path, kind, key, cols, rows, trick, state,
                                       args.seconds, tmp)
                            name = f"{kind} {tui_cpu.VIEWS[key]} {cols}x{rows}"
                            results.append({"case": name, "trick": trick, "state": state,
                                            "round": r, **got})
                            print(f"  {name:22} {trick:15} {state:3}: "
                                  f"{got['cpu_pct']:5.2f} % of a core, "
                                  f"{got['gc_full_passes']} full GC passes, "
                                  f"{got['gc_full_ms_total']:.1f} ms "
                                  f"(longest {got['gc_full_ms_max']:.1f} ms)"
                                  + (f", {got['jobs_per_s']:,.0f} jobs/s"
                                     if kind == "drain" else ""), flush=True)
        finally:
            if feeder is not None:
                feeder.stop.set()
                feeder.join()
            if worker is not None:
                worker.terminate()
                worker.wait(30)
            workers.stop.set()
            workers.join()
    print("\nmeans (on / off):")
    for name in dict.fromkeys(r["case"] for r in results):
        for trick in args.tricks.split(","):
            rows = [r for r in results if r["case"] == name and r["trick"] == trick]
            if not rows:
                continue
            mean = {s: {k: sum(r[k] for r in rows if r["state"] == s)
                        / max(1, sum(1 for r in rows if r["state"] == s))
                        for k in ("cpu_pct", "gc_full_ms_total", "gc_full_ms_max")}
                    for s in ("on", "off")}
            print(f"  {name:22} {trick:15} cpu {mean['on']['cpu_pct']:.2f} / "
                  f"{mean['off']['cpu_pct']:.2f} %   full GC "
                  f"{mean['on']['gc_full_ms_total']:.1f} / "
                  f"{mean['off']['gc_full_ms_total']:.1f} ms in {args.seconds:g} s, longest "
                  f"{mean['on']['gc_full_ms_max']:.1f} / {mean['off']['gc_full_ms_max']:.1f} ms")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seconds": args.seconds, "rounds": args.rounds, "results": results},
                      f, indent=2)


if __name__ == "__main__":
    main()
