"""``jobq demo``: real workers on a database fed with a realistic mix of jobs, so the
monitor has something live to watch. Without a terminal it ends on its own with a summary.

The demo uses its own file (``./jobq-demo.db``, not ``$JOBQ_DB``) so that it never mixes
demo jobs into a real queue.
"""
from __future__ import annotations

import logging
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from typing import Annotated, Optional

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from jobq_core import Backoff, Queue, Worker

from . import render
from .common import Duration, friendly, usage
from .demo_tasks import job_mix, registry

DEMO_DB = "jobq-demo.db"
QUIET_DURATION = 12.0  # seconds, when there is no terminal to press Ctrl-C in
LEASE = 6.0
GRACE = 2.0


@friendly
def demo(
    db: Annotated[str, typer.Option(  # not a Path: that would fold the // of a URL
        "--db", metavar="DATABASE",
        help="Database file or postgresql:// URL (default: ./jobq-demo.db).")] = DEMO_DB,
    duration: Annotated[Optional[float], Duration(
        "Stop after this long (default: at Ctrl-C or when the monitor is quit on a "
        f"terminal, else {QUIET_DURATION:g}s).")] = None,
    workers: Annotated[int, typer.Option(min=1, max=16, metavar="N", help="Worker processes.")] = 2,
    concurrency: Annotated[int, typer.Option(min=1, max=64, metavar="N", help="Slots per worker.")] = 8,
    monitor: Annotated[Optional[bool], typer.Option(
        "--monitor/--no-monitor", help="Open jobq-tui on the demo (default: ask, on a terminal).",
    )] = None,
) -> None:
    """Run workers on a demo database fed with a realistic mix of jobs.

    Fast, slow, flaky, always-failing, delayed and high-priority jobs across a few
    queues. Watch it with: jobq-tui PATH"""
    if duration is not None and not duration > 0:
        usage(f"--duration must be more than 0 seconds, got {duration:g}")
    tty = sys.stdin.isatty() and sys.stdout.isatty()
    if duration is None and not tty:
        duration = QUIET_DURATION
    out = Console(highlight=False, markup=False)
    backoff = Backoff(base=0.5, cap=3.0)
    Queue(db).close()  # create the file and schema before the workers open it
    _quiet_logs()
    run = _DemoRun(db, workers, concurrency, backoff)
    watch = f"jobq-tui {db}" if " " not in str(db) else f"jobq-tui '{db}'"
    out.print(Text.assemble(("jobq demo", "bold"), f": {workers} workers × {concurrency} slots on ",
                            (str(db), "cyan"), f", lease {LEASE:g}s, new jobs every second."))
    out.print(Text.assemble("Watch it live in another terminal: ", (watch, "bold green")))
    run.start()
    try:
        if tty and monitor is not False and _monitor_available():
            if monitor or typer.confirm("Open the monitor here now?", default=True):
                _open_monitor(db)
            else:
                _live(run, out, duration)
        elif tty:
            _live(run, out, duration)
        else:
            _quiet(run, out, duration)
    except KeyboardInterrupt:
        pass
    finally:
        out.print(f"stopping: running jobs get {GRACE:g}s to finish…")
        run.stop()
    _summary(run, out, db, watch)


class _DemoRun:
    """Worker threads plus a feeder thread enqueueing a steady trickle of new jobs."""

    def __init__(self, db: str, n_workers: int, concurrency: int, backoff: Backoff):
        self.db = db
        self.rng = random.Random()
        self.enqueued = 0
        self.started = time.monotonic()
        self.workers = [Worker(Queue(db, backoff=backoff), registry, concurrency=concurrency,
                               lease=LEASE, grace=GRACE, worker_id=f"demo-{os.getpid()}-{i + 1}")
                        for i in range(n_workers)]
        self.feeder_queue = Queue(db)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        self._feed(40)
        for w in self.workers:
            self._threads.append(self._thread(lambda w=w: w.run(handle_signals=False), w.id))
        self._threads.append(self._thread(self._feeder, "demo-feeder"))

    def _thread(self, target, name: str) -> threading.Thread:
        t = threading.Thread(target=target, name=name, daemon=True)
        t.start()
        return t

    def _feed(self, n: int) -> None:
        self.enqueued += len(self.feeder_queue.enqueue_many(job_mix(n, self.rng)))

    def _feeder(self) -> None:
        tick = 0
        while not self._stop.wait(1.0):
            tick += 1
            self._feed(self.rng.randint(3, 9) + (25 if tick % 15 == 0 else 0))

    def stop(self) -> None:
        self._stop.set()
        for w in self.workers:
            w.stop()
        for t in self._threads:
            t.join(timeout=10)
        self.feeder_queue.close()
        for w in self.workers:
            w.queue.close()

    def totals(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for w in self.workers:
            for k, v in w.counts.items():
                total[k] = total.get(k, 0) + v
        return total


def _quiet_logs() -> None:
    """The demo shows its own summary; one log line per job would drown it."""
    log = logging.getLogger("jobq")
    log.handlers[:] = [logging.NullHandler()]
    log.propagate = False


def _monitor_available() -> bool:
    try:
        from jobq_tui.main import main
    except Exception:  # noqa: BLE001 - any import problem: just do not offer it
        return False
    return callable(main)


def _open_monitor(db: str) -> None:
    """Run jobq-tui in this terminal; the demo ends when the monitor is quit (a monitor
    killed from outside could leave the terminal in its alternate screen)."""
    cmd = [sys.executable, "-m", "jobq_tui.main", str(db), "--beat", f"{LEASE / 3:g}"]
    subprocess.run(cmd, check=False)


def _live(run: _DemoRun, out: Console, duration: float | None) -> None:
    deadline = None if duration is None else time.monotonic() + duration
    out.print("Press Ctrl-C to stop.")
    view = _DemoView(run)
    try:
        with Live(view, console=out, refresh_per_second=4, transient=False):
            while deadline is None or time.monotonic() < deadline:
                time.sleep(0.1)
    finally:
        view.queue.close()


def _quiet(run: _DemoRun, out: Console, duration: float) -> None:
    out.print(f"No terminal: running for {duration:g}s, then a summary.")
    deadline = time.monotonic() + duration
    next_line = time.monotonic() + 2.0
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(0.2, left))
        if time.monotonic() >= next_line:
            next_line += 2.0
            t = run.totals()
            out.print(f"  {render.span(time.monotonic() - run.started):>5}: enqueued "
                      f"{run.enqueued}, succeeded {t['succeeded']}, retried {t['failed']}, "
                      f"dead {t['dead']}, running {sum(len(w.running_jobs()) for w in run.workers)}")


class _DemoView:
    def __init__(self, run: _DemoRun):
        self.run = run
        self.queue = Queue(run.db, create=False)

    def __rich__(self) -> Group:
        s = self.queue.stats(window=3600.0)
        t = self.run.totals()
        up = render.span(time.monotonic() - self.run.started)
        head = Text.assemble(
            ("pending ", "bold"), (str(s.pending), "cyan"), "  ", ("running ", "bold"),
            (str(s.running), "yellow"), "  ", ("retrying ", "bold"), str(s.retrying), "  ",
            ("scheduled ", "bold"), str(s.scheduled), "  ", ("dead ", "bold"), (str(s.dead), "red"),
            f"   · this run: {t['succeeded']} succeeded, {t['failed']} retried, {t['dead']} dead"
            f" · up {up}")
        table = Table(box=None, padding=(0, 2), show_edge=False)
        for col in ("WORKER", "ID", "KIND", "TRY", "FOR"):
            table.add_column(col, no_wrap=True)
        for w in self.run.workers:
            for job, took, _ctx in w.running_jobs():
                table.add_row(render.cell(w.id, limit=24), str(job.id),
                              render.cell(job.kind, limit=30), str(job.attempts), render.span(took))
        return Group(head, table)


def _summary(run: _DemoRun, out: Console, db: str, watch: str) -> None:
    t = run.totals()
    with Queue(db, create=False) as q:
        s = q.stats(window=time.monotonic() - run.started + 60)
    out.print(Text.assemble(
        ("demo summary", "bold"), f" ({render.span(time.monotonic() - run.started)}): ",
        f"enqueued {run.enqueued}, succeeded {t['succeeded']}, failed attempts retried "
        f"{t['failed']}, dead {t['dead']}, released {t['released']}; "
        f"left in the queue: {s.pending} pending ({s.scheduled} scheduled), {s.dead} dead in total."))
    out.print("Look around:")
    for cmd in (f"jobq stats --db {db}", f"jobq list --status dead --db {db}", watch):
        out.print(Text("  " + cmd, style="bold"), soft_wrap=True)
    if shutil.which("jobq-tui") is None and not _monitor_available():
        out.print("(jobq-tui is not installed here)")
