"""Entry point of ``jobq-tui`` (and of ``jobq tui``): ``jobq-tui [PATH] [--interval DURATION]
[--read-only] [--beat DURATION]``; PATH defaults to ``$JOBQ_DB``, else ``./jobs.db``, as
for every ``jobq`` command.

Exit codes, as ``jobq``'s: 0 after a normal quit, 1 for a database that cannot be opened
(missing, not SQLite, not jobq, a server that cannot be reached), 2 for bad arguments.
A missing path is never created.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import math
import os
import sys
from collections.abc import Sequence

from jobq_core.presentation.display import parse_duration
from jobq_core.common.textsafe import clean

from .source import Source, SourceError


def _seconds(text: str) -> float:
    """A duration in the forms every jobq command takes (``2``, ``1.5``, ``10s``, ``1m``)."""
    try:
        value = parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if not math.isfinite(value) or value < 0.1:
        raise argparse.ArgumentTypeError(f"must be at least 0.1 seconds, got {text!r}")
    return value


DEFAULT_DB = "jobs.db"


def version() -> str:
    """The installed jobq's version (``unknown`` when run from a tree never installed)."""
    try:
        return importlib.metadata.version("jobq")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="jobq-tui", description="Live terminal monitor of a jobq database.")
    p.add_argument("path", metavar="DATABASE", nargs="?",
                   default=os.environ.get("JOBQ_DB") or DEFAULT_DB,
                   help="the jobq database: a file (never created), sqlite:///path or "
                        "postgresql://user@host/db (default: $JOBQ_DB, else ./jobs.db)")
    p.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    p.add_argument("--interval", type=_seconds, default=1.0, metavar="DURATION",
                   help="refresh interval (default 1s)")
    p.add_argument("--read-only", action="store_true",
                   help="open the database read-only and hide retry/cancel")
    p.add_argument("--beat", type=_seconds, default=10.0, metavar="DURATION",
                   help="heartbeat interval assumed for a worker that recorded neither its "
                        "own nor its lease (an older jobq's): late after one missed beat, "
                        "lost after two (default 10s, a third of the default 30 s lease)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    source = Source(args.path, read_only=args.read_only)
    try:
        source.open()
    except SourceError as e:
        print(f"jobq-tui: {clean(str(e))}", file=sys.stderr)
        return 1
    from .app import MonitorApp  # Textual loads only once the database is known good

    try:
        MonitorApp(source, interval=args.interval, beat=args.beat).run()
    finally:
        source.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
