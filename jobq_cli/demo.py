"""``jobq demo``: real worker processes on a database fed with a realistic mix of jobs, so
the monitor has something live to watch. Without a terminal it ends on its own with a
summary.

Each worker is its own process (``jobq run --app jobq_cli.demo_tasks``) and the demo
prints their pids, so an operator can ``kill -9`` one and watch the monitor tell the
truth: its jobs' leases run out, the worker turns late then lost, another takes the jobs.
The feeder stays in this process. The demo uses its own file (``./jobq-demo.db``, not
``$JOBQ_DB``) so that it never mixes demo jobs into a real queue.
"""
from __future__ import annotations

import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.live import Live
from rich.text import Text

from jobq_core import FORGET_AFTER, Queue, Stats
from jobq_core.presentation.display import masked_url

from . import render, tables
from .common import Duration, friendly, usage
from .tables import NEVER_DROPPED, Col

DEMO_DB = "jobq-demo.db"
QUIET_DURATION = 12.0  # seconds, when there is no terminal to press Ctrl-C in
LEASE = 6.0
GRACE = 2.0
APP = "jobq_cli.demo_tasks"


@friendly
def demo(
    db: Annotated[str, typer.Option(  # not a Path: that would fold the // of a URL
        "--db", metavar="DATABASE",
        help="Database file or postgresql:// URL (default: ./jobq-demo.db).")] = DEMO_DB,
    duration: Annotated[Optional[float], Duration(
        "Stop after this long (default: at Ctrl-C or when the monitor is quit on a "
        f"terminal, else {QUIET_DURATION:g}s).")] = None,
    workers: Annotated[int, typer.Option(min=1, max=16, metavar="N",
                                         help="Worker processes.")] = 2,
    concurrency: Annotated[int, typer.Option(min=1, max=64, metavar="N",
                                             help="Slots per worker.")] = 8,
    monitor: Annotated[Optional[bool], typer.Option(
        "--monitor/--no-monitor", help="Open jobq-tui on the demo (default: ask, on a terminal).",
    )] = None,
) -> None:
    """Run worker processes on a demo database fed with a realistic mix of jobs.

    Fast, slow, flaky, always-failing, delayed and high-priority jobs across a few
    queues. It prints each worker's pid: kill one and watch the monitor."""
    if duration is not None and not duration > 0:
        usage(f"--duration must be more than 0 seconds, got {duration:g}")
    tty = sys.stdin.isatty() and sys.stdout.isatty()
    out = Console(highlight=False, markup=False, soft_wrap=True)  # never cut a sentence
    Queue(db).close()  # create the file and schema before the workers open it
    run = _DemoRun(db, workers, concurrency)
    shown = shlex.quote(masked_url(str(db)))  # the hints are printed, never run
    watch = f"{_program('jobq-tui', 'jobq_tui.main')} {shown}"
    out.print(Text.assemble(("jobq demo", "bold"), f": {workers} worker process"
                            f"{'es' if workers != 1 else ''} × "
                            f"{concurrency} slots on ", (masked_url(str(db)), "cyan"),
                            f", lease {LEASE:g}s, new jobs every second, a periodic one every 10s."))
    out.print(Text.assemble("Watch it live in another terminal: ", (watch, "bold green")))
    try:
        run.start()
        for i, (pid, worker_id) in enumerate(run.registered(timeout=10.0), 1):
            out.print(Text.assemble(f"  worker {i}: pid ", (str(pid), "bold"),
                                    f"  {render.cell(worker_id, limit=60)}"))
        pids = [str(p.pid) for p in run.procs]
        out.print(Text.assemble(
            "Try it: ", (f"kill -9 {pids[0]}", "bold yellow"),
            " — in the monitor the worker turns ◐ late, then ✗ lost (its jobs' rows say"
            f" so), its jobs' leases run out (✗ EXPIRED within {LEASE:g}s of its last beat),"
            " and "
            + ("another worker takes its jobs." if len(pids) > 1 else
               "its jobs wait for a worker: the header says ! no live worker.")
            + f" After {FORGET_AFTER / 60:g} minutes without a beat it is forgotten."))
        if tty and monitor is not False and _monitor_available():
            if monitor or typer.confirm("Open the monitor here now?", default=True):
                _open_monitor(db)
            else:
                _live(run, out, duration)
        elif tty:
            _live(run, out, duration)
        else:  # no terminal: a run of QUIET_DURATION unless told how long
            _quiet(run, out, QUIET_DURATION if duration is None else duration)
    except KeyboardInterrupt:
        pass
    finally:
        run.stopped = time.monotonic()  # the summary spans the run, not its stop
        out.print(f"stopping: running jobs get {GRACE:g}s to finish…")
        try:
            run.stop()
        except KeyboardInterrupt:  # Ctrl-C while it stops (after --duration): at once
            run.kill()
    _summary(run, out, db, watch)


class _DemoRun:
    """Worker processes (``jobq run``) plus a feeder thread enqueueing a steady trickle
    of new jobs."""

    def __init__(self, db: str, n_workers: int, concurrency: int):
        self.db = db
        self.n_workers = n_workers
        self.concurrency = concurrency
        self.rng = random.Random()
        self.enqueued = 0
        self.started = time.monotonic()
        self.started_at = time.time()
        self.running_since = self.started  # "running for": from the workers' start, or
        self.stopped: float | None = None     # from when the quiet run says so
        self.feeder_queue = Queue(db)
        self.procs: list[subprocess.Popen[bytes]] = []
        self.log = Path(tempfile.gettempdir()) / f"jobq-demo-{os.getpid()}.log"
        self._stop = threading.Event()
        self._feeder = threading.Thread(target=self._feed_loop, name="demo-feeder", daemon=True)

    def start(self) -> None:
        self._feed(40)
        cmd = [sys.executable, "-m", "jobq_cli.main", "run", "--app", APP, "--db", str(self.db),
               "--concurrency", str(self.concurrency), "--lease", f"{LEASE:g}",
               "--grace", f"{GRACE:g}", "--log-level", "WARNING"]
        with open(self.log, "ab") as log:
            for _ in range(self.n_workers):
                # A session of its own: Ctrl-C here stops them once, through stop(), not
                # twice (a second signal would make a worker exit without releasing).
                self.procs.append(subprocess.Popen(
                    cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                    start_new_session=True))
        self._feeder.start()

    def registered(self, timeout: float) -> list[tuple[int, str]]:
        """(pid, worker id) of each worker process once it has registered (or its pid
        alone, ``-``, if it has not within ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        ids: dict[int, str] = {}
        with Queue(self.db, create=False) as q:
            while time.monotonic() < deadline:
                ids = {w.pid: w.id for w in q.workers()}
                if all(p.pid in ids or p.poll() is not None for p in self.procs):
                    break
                time.sleep(0.1)
        return [(p.pid, ids.get(p.pid, "-")) for p in self.procs]

    def _feed(self, n: int) -> None:
        from .demo_tasks import job_mix  # the demo's handlers (and asyncio) load for the demo only

        self.enqueued += len(self.feeder_queue.enqueue_many(job_mix(n, self.rng)))

    def _feed_loop(self) -> None:
        tick = 0
        while not self._stop.wait(1.0):
            tick += 1
            self._feed(self.rng.randint(3, 9) + (25 if tick % 15 == 0 else 0))

    def gone(self) -> list[str]:
        """The worker processes that have ended, said for people (``pid 4242 (killed by
        SIGKILL)``)."""
        out = []
        for p in self.procs:
            code = p.poll()
            if code is not None:
                why = (f"killed by {signal.Signals(-code).name}" if code < 0 else
                       f"exit status {code}")
                out.append(f"pid {p.pid} ({why})")
        return out

    def stop(self) -> None:
        self._stop.set()
        if self._feeder.is_alive():
            self._feeder.join(timeout=10)
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)  # once: running jobs get GRACE to finish
        deadline = time.monotonic() + GRACE + 10
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.feeder_queue.close()

    def kill(self) -> None:
        """Stop at once: the workers get no grace (their jobs come back when their leases
        run out)."""
        self._stop.set()
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.feeder_queue.close()


def _program(name: str, module: str) -> str:
    """How to run one of jobq's programs as this demo runs: its bare name when that is on
    PATH and is the one next to this Python; else that one by its path
    (``.venv/bin/jobq-tui``); else, with no such script (jobq imported from a source
    tree), this Python with ``-m module``."""
    mine = Path(sys.executable).parent / name
    if not mine.exists():
        return f"{_path(sys.executable)} -m {module}"
    found = shutil.which(name)
    if found is not None and Path(found).resolve() == mine.resolve():
        return name
    return _path(str(mine))


def _path(path: str) -> str:
    """``path`` as short as it runs from here: relative below the current directory."""
    relative = os.path.relpath(path)
    if relative.startswith(".."):
        return shlex.quote(path)
    return shlex.quote(relative if os.sep in relative else os.path.join(".", relative))


def _monitor_available() -> bool:
    try:
        from jobq_tui.main import main
    except Exception:  # noqa: BLE001 - any import problem: just do not offer it
        return False
    return callable(main)


def _open_monitor(db: str) -> None:
    """Run jobq-tui in this terminal; the demo ends when the monitor is quit (a monitor
    killed from outside could leave the terminal in its alternate screen). The workers
    record their heartbeat interval, so the monitor needs no --beat."""
    subprocess.run([sys.executable, "-m", "jobq_tui.main", str(db)], check=False)


def _live(run: _DemoRun, out: Console, duration: float | None) -> None:
    deadline = None if duration is None else time.monotonic() + duration
    out.print("Press Ctrl-C to stop.")
    view = _DemoView(run)
    # Wrapped to the terminal, unlike ``out``: Live redraws by moving the cursor up as many
    # lines as it printed, and a line the terminal wrapped would leave a copy behind.
    screen = Console(highlight=False, markup=False)
    try:
        with Live(view, console=screen, refresh_per_second=4, transient=False):
            while deadline is None or time.monotonic() < deadline:
                time.sleep(0.1)
    finally:
        view.queue.close()


def _quiet(run: _DemoRun, out: Console, duration: float) -> None:
    out.print(f"No terminal: running for {duration:g}s, then a summary.")
    run.running_since = time.monotonic()  # what the summary's span counts from
    deadline = run.running_since + duration
    next_line = time.monotonic() + 2.0
    reported: set[str] = set()
    with Queue(run.db, create=False) as q:
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(0.2, left))
            for gone in run.gone():
                if gone not in reported:
                    reported.add(gone)
                    out.print(f"  a worker ended: {gone}")
            if time.monotonic() >= next_line:
                next_line += 2.0
                s = _run_stats(run, q)
                out.print(f"  {render.span(time.monotonic() - run.running_since):>5}: enqueued "
                          f"{run.enqueued}, succeeded {s.succeeded_recent}, dead "
                          f"{s.dead_recent}, retrying {s.retrying}, running {s.running}")


def _run_stats(run: _DemoRun, q: Queue) -> Stats:
    """Counts over this run (finished counts since it started)."""
    return q.stats(window=max(1.0, time.time() - run.started_at))


DEMO_COLS = (
    Col("PID", NEVER_DROPPED, fixed=True, justify="right"),
    Col("ID", NEVER_DROPPED, fixed=True, justify="right"),
    Col("KIND", 80, least=12, want=24, shrink=1),
    Col("TRY", 60, fixed=True, justify="right"),
    Col("FOR", 70, fixed=True, justify="right"),
)


class _DemoView:
    def __init__(self, run: _DemoRun):
        self.run = run
        self.queue = Queue(run.db, create=False)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        q, run = self.queue, self.run
        s = _run_stats(run, q)
        pid_of = {w.id: w.pid for w in q.workers()}
        up = render.span(time.monotonic() - run.started)
        head = Text.assemble(
            ("pending ", "bold"), (str(s.pending), "cyan"), "  ", ("running ", "bold"),
            (str(s.running), "yellow"), "  ", ("retrying ", "bold"), str(s.retrying), "  ",
            ("scheduled ", "bold"), str(s.scheduled), "  ", ("dead ", "bold"), (str(s.dead), "red"),
            f"\nthis run: {s.succeeded_recent} succeeded, {s.dead_recent} dead · up {up}")
        now = q.clock.now()
        rows: list[list[Text | str]] = [
            [str(pid_of.get(job.worker or "", "?")), str(job.id),
             render.cell(job.kind, limit=30), f"{job.attempts}/{job.max_attempts}",
             render.span(now - (job.started_at or now))]
            for job in q.list("running", limit=16, payloads=False)]
        table = tables.table(DEMO_COLS, rows, options.max_width)
        gone = run.gone()
        parts: list[RenderableType] = [head, table]
        if gone:
            parts.append(Text("ended: " + ", ".join(gone), style="yellow"))
        yield from parts


def _summary(run: _DemoRun, out: Console, db: str, watch: str) -> None:
    with Queue(db, create=False) as q:
        s = _run_stats(run, q)
    out.print(Text.assemble(
        ("demo summary", "bold"),
        f" ({render.span((run.stopped or time.monotonic()) - run.running_since)}): ",
        f"enqueued {run.enqueued}, succeeded {s.succeeded_recent}, dead {s.dead_recent}; "
        f"left in the queue: {s.pending} pending ({s.scheduled} scheduled, {s.retrying} "
        f"retrying), {s.dead} dead in total."))
    for gone in run.gone():
        if "SIGTERM" not in gone and "exit status 0" not in gone:
            out.print(f"a worker ended early: {gone} (its log: {run.log})")
    out.print("Look around:")
    jobq = _program("jobq", "jobq_cli.main")
    shown = shlex.quote(masked_url(str(db)))
    for cmd in (f"{jobq} workers --db {shown}", f"{jobq} stats --db {shown}",
                f"{jobq} list --status dead --db {shown}", watch):
        out.print(Text("  " + cmd, style="bold"))
    if not _monitor_available():
        out.print("(jobq-tui is not installed here)")
