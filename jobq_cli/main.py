"""The ``jobq`` command line (Typer): enqueue, run workers, administer, demo.

Every command takes ``--db PATH`` (default ``$JOBQ_DB``, else ``./jobs.db``); the read and
admin commands never create a missing database. Scripts use ``--json`` (keys documented
in the README) and the exit status: 0 success, 1 a reported error, 2 a usage error.
"""
from __future__ import annotations

import sys
import warnings

import typer

from jobq_core import JobqError

from . import admin, bench, copy, demo, metrics, produce, run
from .common import DEFAULT_DB, DbOption

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="jobq: a background job queue on SQLite.")

app.command()(produce.enqueue)
app.command()(run.run)
app.command()(admin.stats)
app.command("list")(admin.list_jobs)
app.command()(admin.show)
app.command()(admin.workers)
app.command()(admin.retry)
app.command()(admin.cancel)
app.command()(admin.reap)
app.command()(admin.prune)
app.command()(metrics.metrics)
app.command()(copy.copy)
app.command()(demo.demo)
app.command()(bench.bench)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def tui(ctx: typer.Context, db: DbOption = DEFAULT_DB) -> None:
    """Open the live monitor (jobq-tui) on the database.

    Other options go to jobq-tui: --interval S, --read-only, --beat S."""
    from jobq_tui.main import main as tui_main

    raise typer.Exit(tui_main([str(db), *ctx.args]))


@app.callback()
def _root() -> None:
    """jobq: a background job queue on SQLite."""


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    """Warnings (a database on a network filesystem) as one plain line, not a source dump."""
    return f"jobq: warning: {message}\n"


def main() -> int:
    warnings.formatwarning = _one_line_warning
    try:
        app()
    except JobqError as e:
        print(f"jobq: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
