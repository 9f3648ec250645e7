"""``jobq copy --from DATABASE --to DATABASE``: carry pending and dead jobs to another store
(SQLite to PostgreSQL or back), as they are: status, attempts, last error, times, unique
key. Their attempt history and finished jobs stay behind; nothing in the source changes.

Stop the producers and workers of the source first: a job enqueued or claimed there while
the copy runs may be missed or copied twice. Each page of jobs is one transaction in the
destination, reported as it commits: a copy stopped part-way leaves the pages it reported
(start again into a fresh database).
"""
from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from jobq_core import Queue

from .common import JsonOption, friendly, open_queue, print_json, usage

PAGE = 500


@friendly
def copy(
    source: Annotated[str, typer.Option("--from", metavar="DATABASE",
                                        help="The store to copy from (left unchanged).")],
    target: Annotated[str, typer.Option("--to", metavar="DATABASE",
                                        help="The store to copy into (created if missing).")],
    status: Annotated[Optional[list[str]], typer.Option(
        "--status", metavar="STATUS",
        help="Which jobs: pending, dead (repeatable; default both).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Copy pending and dead jobs from one store to another (SQLite <-> PostgreSQL)."""
    statuses = status or ["pending", "dead"]
    for s in statuses:
        if s not in ("pending", "dead"):
            usage(f"--status takes pending or dead, got {s!r}")
    if source == target:
        usage("--from and --to name the same database")
    counts = {s: 0 for s in statuses}
    with open_queue(source, read_only=True) as src, open_queue(target, create=True) as dst:
        for s in statuses:
            for page in _pages(src, s):
                dst.copy_in(page)
                counts[s] += len(page)
                if not as_json:
                    print(f"{s}: {counts[s]} copied", file=sys.stderr)
    if as_json:
        print_json({"copied": counts})
    else:
        print(" ".join(f"{s}={n}" for s, n in counts.items()))


def _pages(q: Queue, status: str):
    """The source's jobs of ``status``, a page at a time (the source must not change)."""
    offset = 0
    while True:
        jobs = q.list(status, limit=PAGE, offset=offset)
        if not jobs:
            return
        offset += len(jobs)
        yield jobs
