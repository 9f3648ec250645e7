"""``jobq copy --from DATABASE --to DATABASE``: a queue carried to another store (SQLite to
PostgreSQL or back) by ``Queue.copy_from``, which says what is copied and how; this module
checks the options and reports, a line on stderr per page and a summary on stdout.
"""
from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from jobq_core import COPY_STATUSES, CopyReport, CopySkip
from jobq_core.common.textsafe import clean

from .common import JsonOption, friendly, open_queue, print_json, usage


@friendly
def copy(
    source: Annotated[str, typer.Option("--from", metavar="DATABASE",
                                        help="The store to copy from (left unchanged).")],
    target: Annotated[str, typer.Option("--to", metavar="DATABASE",
                                        help="The store to copy into (created if missing).")],
    status: Annotated[Optional[list[str]], typer.Option(
        "--status", metavar="STATUS",
        help="Which jobs: pending, running, waiting, dead (repeatable; default all four). "
             "A running job arrives pending.")] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Go on with the copy from this source that the destination "
                         "records (stopped part-way, or for the jobs added since): only the "
                         "jobs after the last one it read.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Copy a queue into another store (SQLite <-> PostgreSQL). Jobs get new ids.

    Copied: pending, waiting and dead jobs as they are (status, attempts, last error,
    times, keys); running jobs as pending, runnable now, the attempt counted (their lease
    is void in the new store); the finished jobs that copied jobs wait on, as they ended;
    each queue's pause and limits; the periodic schedules with their last ticks. A queue
    or schedule the destination has already keeps its own. Left behind: other succeeded
    and cancelled jobs, attempt history, the worker registry.

    Skipped, and counted with the reason: a job whose unique key a live job of the
    destination holds (jobs waiting on it wait on that one), and a pending, running or
    waiting job that waits on a job not copied.

    Stop the source's producers and workers first. One transaction per page of 500
    jobs. The destination records the copy: a second copy from the same source is
    refused, writing nothing; --resume goes on after the last job the copy read instead,
    copying no job twice.
    """
    statuses = status or list(COPY_STATUSES)
    for s in statuses:
        if s not in COPY_STATUSES:
            usage(f"--status takes {', '.join(COPY_STATUSES)}, got {s!r}")
    if source == target:
        usage("--from and --to name the same database")
    with open_queue(source, read_only=True) as src, open_queue(target, create=True) as dst:
        report = dst.copy_from(src, statuses=statuses, resume=resume,
                               on_page=None if as_json else _progress)
    if as_json:
        print_json({"copied": report.copied, "skipped": report.skipped,
                    "queues": {"copied": list(report.queues), "kept": list(report.queues_kept)},
                    "schedules": {"copied": list(report.schedules),
                                  "kept": list(report.schedules_kept)},
                    "through": report.through, "resumed": report.resumed})
    else:
        print(summary(report))


def _progress(report: CopyReport) -> None:
    print(f"{sum(report.copied.values())} copied, "
          f"{sum(n for c in report.skipped.values() for n in c.values())} skipped "
          f"(through job {report.through})", file=sys.stderr)


def summary(report: CopyReport) -> str:
    """One line: the jobs copied and skipped by status, why, and the controls and schedules
    (``copied pending=3 running=1 waiting=0 dead=1; skipped pending=1 (a live job ...);
    queue controls 2 copied; schedules 1 copied``)."""
    parts = ["copied " + " ".join(f"{s}={n}" for s, n in report.copied.items())]
    for s, reasons in report.skipped.items():
        parts.append(f"skipped {s}=" + ", ".join(f"{n} ({CopySkip(r).text})"
                                                 for r, n in reasons.items()))
    if report.resumed:
        parts.append("resumed (queue controls and schedules came with the first run)")
        return "; ".join(parts)
    queues = f"queue controls {len(report.queues)} copied"
    if report.queues_kept:
        queues += (f" ({len(report.queues_kept)} kept the destination's own: "
                   f"{clean(', '.join(report.queues_kept), limit=200)})")
    schedules = f"schedules {len(report.schedules)} copied"
    if report.schedules_kept:
        schedules += f" ({len(report.schedules_kept)} kept the destination's own)"
    return "; ".join([*parts, queues, schedules])
