"""``jobq bench``: how fast jobq runs on this machine and disk, every figure checked for
correctness (each job stored, or succeeded exactly once). The measurements are in
``bench_runs``; this module parses options, shows progress and prints the results.

Measurements run one after another, each on its own fresh database in a temporary
directory that is removed afterwards, even on Ctrl-C. A failed correctness check still
prints every result, then exits with status 1.
"""
from __future__ import annotations

import functools
import os
import platform
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich import box
from rich.console import Console, JustifyMethod
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from jobq_core import Queue

from . import bench_runs as runs
from .common import JsonOption, fail, friendly, print_json, usage

WORKLOADS = ("enqueue", "batch", "drain", "worker", "pool", "latency", "scale", "limits")
SYNCHRONOUS = ("NORMAL", "FULL")

Step = tuple[str, Callable[[runs.Settings, runs.Note], runs.Row]]


@friendly
def bench(
    jobs: Annotated[int, typer.Option(
        metavar="N", help="Jobs per enqueue and drain measurement.")] = 20_000,
    processes: Annotated[int, typer.Option(
        metavar="N",
        help="Processes of the multi-process drains (the single-process ones always run).")] = 4,
    scale_jobs: Annotated[int, typer.Option(
        metavar="N",
        help="Backlog (and finished history) of the scale measurements; try 1000000.")] = 200_000,
    samples: Annotated[int, typer.Option(
        metavar="N", help="Jobs timed by the latency measurement.")] = 200,
    only: Annotated[Optional[str], typer.Option(
        metavar="WORKLOAD[,WORKLOAD]", help=f"Run only these: {', '.join(WORKLOADS)}.")] = None,
    db_dir: Annotated[Optional[Path], typer.Option(
        metavar="PATH", help="Put the databases in a new temporary directory inside PATH "
                             "(the disk to measure; default: the system's temporary directory)."
    )] = None,
    synchronous: Annotated[str, typer.Option(
        metavar="NORMAL|FULL", help="SQLite synchronous mode of every connection.")] = "NORMAL",
    as_json: JsonOption = False,
) -> None:
    """Measure jobq on this machine: enqueue, drain, worker, pool, latency, scale, limits.

    Workloads (--only): enqueue = one job per transaction; batch = enqueue_many,
    1000 per call; drain = claim + complete, one job at a time, in 1 and in
    --processes processes; worker = Worker(...).run(burst=True), default
    settings, no-op handler, in 1 and in --processes processes; pool = the
    process pool against the thread pool, 3 rounds each, alternating: no-op
    jobs at the default concurrency (pool_noop) and CPU-bound jobs of ~20 ms
    with 2 slots (pool_cpu; a hundredth of --jobs, 10 to 200); latency =
    enqueue-to-start for an idle worker in another process (p50, p99) and that
    worker's idle CPU use; scale = draining 10,000 jobs (a tenth of --scale-jobs
    if less) from a --scale-jobs backlog against a backlog of just those
    (scale_backlog), and stats() plus as many claims with --scale-jobs jobs that
    finished two days ago in the table against none (scale_history); limits =
    claim + complete of --jobs jobs one at a time with no queue controls,
    with limits on an unrelated queue, and with a limit on the queue drained.
    Every measurement checks that each job was stored, or succeeded exactly once.

    --json prints {"jobq", "python", "sqlite", "platform", "cpus", "filesystem",
    "synchronous", "jobs", "processes", "scale_jobs", "samples", "ok",
    "results"}. "results" maps enqueue, batch, drain_api_1, drain_api_n,
    drain_worker_1, drain_worker_n, pool_noop, pool_cpu, latency,
    scale_backlog, scale_history (the *_n rows only with --processes > 1) to
    rows with "jobs", "processes",
    "seconds", "rate" (jobs/s; null for latency) and the checks "ok",
    "expected", "counted", "duplicates", "redelivered", "lost", "errors".
    drain_worker_* add "ratio_to_api"; pool_* (rate: the process pool's, the
    median of the rounds; seconds from a drain's first job's start to its
    last one's end) add "concurrency", "rounds", "rate_thread",
    "ratio_to_thread", "startup_ms" and "startup_ms_thread" (from the start
    of the run to the first job's start); latency adds "samples", "p50_ms",
    "p99_ms", "max_ms", "idle_cpu_percent"; scale_backlog adds "backlog_small",
    "backlog_large", "rate_small", "rate_large", "ratio"; scale_history adds
    "finished", "rate_empty", "rate_full", "ratio", "stats_ms_empty",
    "stats_ms_full", "stats_ratio"; limits adds "rate_none",
    "rate_other_limited", "rate_own_limited", "ratio" (other limited against
    none) and "ratio_own". Every ratio compares speeds: 1.0 means as
    fast, below 1.0 slower.
    """
    chosen = _check_options(jobs, processes, scale_jobs, samples, only, db_dir, synchronous)
    workdir = Path(tempfile.mkdtemp(prefix="jobq-bench-", dir=db_dir))
    try:
        s = runs.Settings(workdir, jobs, processes, scale_jobs, samples, synchronous.upper())
        environment = _environment(s, workdir)
        results = _run(s, _steps(s, chosen))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report = {**environment, "ok": all(r["ok"] for r in results.values()), "results": results}
    if as_json:
        print_json(report)
    else:
        out = Console(highlight=False, markup=False, emoji=False)
        if not out.is_terminal and "COLUMNS" not in os.environ:
            # Piped with no width given: wide enough that no result wraps in a saved report.
            out = Console(highlight=False, markup=False, emoji=False, width=140)
        out.print(_table(report))
    failed = [f"{k} ({_check_text(r)})" for k, r in results.items() if not r["ok"]]
    if failed:
        fail(f"correctness check failed: {'; '.join(failed)}")


def _check_options(jobs: int, processes: int, scale_jobs: int, samples: int,
                   only: str | None, db_dir: Path | None, synchronous: str) -> list[str]:
    for name, value, low in (("--jobs", jobs, 1), ("--processes", processes, 1),
                             ("--scale-jobs", scale_jobs, 10), ("--samples", samples, 1)):
        if value < low:
            usage(f"{name} must be >= {low}, got {value}")
    if processes > 64:
        usage(f"--processes must be <= 64, got {processes}")
    if synchronous.upper() not in SYNCHRONOUS:
        usage(f"--synchronous must be NORMAL or FULL, got {synchronous!r}")
    if db_dir is not None and not db_dir.is_dir():
        usage(f"--db-dir {str(db_dir)!r} is not an existing directory")
    if only is None:
        return list(WORKLOADS)
    chosen = [w.strip().lower() for w in only.split(",") if w.strip()]
    for w in chosen:
        if w not in WORKLOADS:
            usage(f"unknown workload {w!r} in --only; choose from {', '.join(WORKLOADS)}")
    if not chosen:
        usage(f"--only names no workload; choose from {', '.join(WORKLOADS)}")
    return chosen


def _steps(s: runs.Settings, chosen: list[str]) -> list[Step]:
    counts = [(1, "1")] + ([(s.processes, "n")] if s.processes > 1 else [])
    steps: list[Step] = []
    if "enqueue" in chosen:
        steps.append(("enqueue", runs.enqueue))
    if "batch" in chosen:
        steps.append(("batch", runs.batch))
    for name, role, fn in (("drain", "api", runs.drain_api), ("worker", "worker", runs.drain_worker)):
        if name in chosen:
            steps += [(f"drain_{role}_{suffix}", functools.partial(fn, processes=n))
                      for n, suffix in counts]
    if "pool" in chosen:
        steps += [("pool_noop", runs.pool_noop), ("pool_cpu", runs.pool_cpu)]
    if "latency" in chosen:
        steps.append(("latency", runs.latency))
    if "scale" in chosen:
        steps += [("scale_backlog", runs.scale_backlog), ("scale_history", runs.scale_history)]
    if "limits" in chosen:
        steps.append(("limits", runs.limits))
    return steps


def _run(s: runs.Settings, steps: list[Step]) -> dict[str, runs.Row]:
    """Run the steps in order, with a Rich progress display on a terminal (stderr), one
    plain line per step otherwise. A process failure ends the run as a one-line error."""
    err = Console(stderr=True, highlight=False, markup=False, emoji=False)
    results: dict[str, runs.Row] = {}
    if err.is_terminal:
        columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(),
                   MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=err, transient=True, refresh_per_second=4) as progress:
            task = progress.add_task("jobq bench", total=len(steps))
            for key, fn in steps:
                progress.update(task, description=key)
                _step(s, results, key, fn, lambda text: progress.update(task, description=text))
                progress.console.print(_line(key, results[key]))
                progress.advance(task)
    else:
        for n, (key, fn) in enumerate(steps, 1):
            _step(s, results, key, fn, lambda text: None)
            err.print(f"[{n}/{len(steps)}] {_line(key, results[key])}", soft_wrap=True)
    return results


def _step(s: runs.Settings, results: dict[str, runs.Row], key: str,
          fn: Callable[[runs.Settings, runs.Note], runs.Row], note: runs.Note) -> None:
    try:
        results[key] = fn(s, note)
    except runs.BenchError as e:
        fail(f"{key}: {e}")
    _add_ratios(results)


def _add_ratios(results: dict[str, runs.Row]) -> None:
    for suffix in ("1", "n"):
        worker, api = results.get(f"drain_worker_{suffix}"), results.get(f"drain_api_{suffix}")
        if worker is not None:
            worker["ratio_to_api"] = runs.ratio(worker["rate"], api.get("rate") if api else None)


def _environment(s: runs.Settings, workdir: Path) -> dict[str, Any]:
    from importlib import metadata  # 15 ms that no other command needs

    try:
        version = metadata.version("jobq")
    except metadata.PackageNotFoundError:
        version = None
    with Queue(workdir / "describe.db") as q:
        store = q.describe()
    return {"jobq": version, "python": platform.python_version(),
            "sqlite": store.get("sqlite"),  # the library the store links
            "platform": platform.platform(), "cpus": os.cpu_count(),
            "filesystem": store.get("filesystem"),
            "synchronous": s.synchronous, "jobs": s.jobs, "processes": s.processes,
            "scale_jobs": s.scale_jobs, "samples": s.samples}


# -- output ----------------------------------------------------------------------------------

def _result_text(key: str, r: runs.Row) -> str:
    if key == "latency":
        return (f"p50 {r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms, "
                f"idle CPU {r['idle_cpu_percent']:.1f}%")
    if key == "scale_backlog":
        return f"{r['rate_large']:,.0f} jobs/s at {r['backlog_large']:,} pending"
    if key == "scale_history":
        return (f"{r['rate_full']:,.0f} jobs/s, stats {r['stats_ms_full']:.2f} ms "
                f"at {r['finished']:,} finished")
    if key == "limits":
        return (f"{r['rate_none']:,.0f} jobs/s, {r['rate_other_limited']:,.0f} with a limit "
                f"elsewhere, {r['rate_own_limited']:,.0f} with its own")
    if key.startswith("pool_"):
        return (f"{r['rate']:,.0f} jobs/s with {r['concurrency']} processes, "
                f"{r['rate_thread']:,.0f} with threads; start-up {r['startup_ms']:,.0f} ms")
    return f"{r['rate']:,.0f} jobs/s"


def _ratio_text(key: str, r: runs.Row) -> str:
    def x(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}x"
    if key.startswith("drain_worker"):
        return f"{x(r.get('ratio_to_api'))} the API drain"
    if key.startswith("pool_"):
        return f"{x(r['ratio_to_thread'])} the thread pool"
    if key == "scale_backlog":
        return f"{x(r['ratio'])} the rate at {r['backlog_small']:,}"
    if key == "scale_history":
        return f"claims {x(r['ratio'])}, stats {x(r['stats_ratio'])} vs empty"
    if key == "limits":
        return f"{x(r['ratio'])} with a limit elsewhere, {x(r['ratio_own'])} with its own"
    return ""


def _check_text(r: runs.Row) -> str:
    if r["ok"]:
        return f"ok {r['counted']:,}"
    bad = [f"{r[k]:,} {k}" for k in ("lost", "duplicates", "redelivered", "errors") if r[k]]
    return "FAILED: " + (", ".join(bad) or f"{r['counted']:,}/{r['expected']:,}")


def _line(key: str, r: runs.Row) -> str:
    ratio = _ratio_text(key, r)
    return (f"{key}: {r['jobs']:,} jobs, {r['processes']} proc: {_result_text(key, r)}"
            f"{f' ({ratio})' if ratio else ''}, {_check_text(r)}")


def _table(report: dict[str, Any]) -> Table:
    fs = f", {report['filesystem']}" if report["filesystem"] else ""
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), title=f"jobq bench · synchronous={report['synchronous']} · "
                        f"{report['cpus']} CPUs{fs} · Python {report['python']}, "
                        f"SQLite {report['sqlite']}", title_justify="left")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("workload", "left"), ("jobs", "right"), ("procs", "right"), ("result", "left"),
        ("ratio", "left"), ("check", "left"))
    for name, justify in columns:
        table.add_column(name, justify=justify, no_wrap=name not in ("result", "ratio"),
                         min_width=14 if name in ("result", "ratio") else None)
    for key, r in report["results"].items():
        table.add_row(key, f"{r['jobs']:,}", str(r["processes"]), _result_text(key, r),
                      _ratio_text(key, r), Text(_check_text(r), style="green" if r["ok"] else "bold red"))
    return table
