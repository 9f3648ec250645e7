"""The ``jobq`` command line (Typer): enqueue, run workers, administer, demo.

Every command takes ``--db PATH`` (default ``$JOBQ_DB``, else ``./jobs.db``); the read and
admin commands never create a missing database. Scripts use ``--json`` (keys documented
in docs/reference/cli.md) and the exit status: 0 success, 1 a reported error, 2 a usage error.
"""
from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, cast

import typer
from typer.core import TyperCommand, TyperGroup

from jobq_core import JobqError
from jobq_core.common.textsafe import clean

from . import admin, bench, controls, copy, demo, metrics, produce, run, upkeep, web
from .common import DEFAULT_DB, DbOption, UsageError, friendly, open_queue

if TYPE_CHECKING:
    # Typer vendors Click (typer._click) and exports few of its names: the checker reads
    # these classes where they are defined; nothing is imported from there at run time.
    from typer._click import Context as ClickContext
    from typer._click import HelpFormatter
    from typer._click.exceptions import ClickException
    from typer._click.exceptions import UsageError as ClickUsageError

# Click's exceptions, found through the one Typer exports (Typer vendors Click). The casts
# are true: each is the class of that name among BadParameter's bases.
_CLICK_ERROR = cast("type[ClickException]", next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"))
_USAGE_ERROR = cast("type[ClickUsageError]", next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError"))


class OneLineErrors(TyperGroup):
    """Every error is one line on stderr, ``jobq: ...``: exit status 1, or 2 for a usage
    error. Click would print its usage errors as three lines (or a box)."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args,
                                **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args,
                                **extra)
        except _CLICK_ERROR as e:
            sys.exit(_report(e))
        except typer.Abort:
            print("jobq: aborted", file=sys.stderr)
            sys.exit(1)
        except JobqError as e:
            print(f"jobq: {clean(str(e), limit=2000)}", file=sys.stderr)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: ClickContext) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as e:  # a command's own check of its options: said as Click's are
            name = ctx.invoked_subcommand
            sub = self.get_command(ctx, name) if name is not None else None
            if sub is None:  # no subcommand ran (none raises this): the error is jobq's
                raise _USAGE_ERROR(str(e), ctx=ctx) from None
            command = type(ctx)(sub, parent=ctx, info_name=name)
            raise _USAGE_ERROR(str(e), ctx=command) from None


def _report(e: ClickException) -> int:
    if type(e).__name__ == "NoArgsIsHelpError":  # `jobq` alone: its help
        print(e.format_message())
        return 0
    ctx = getattr(e, "ctx", None)
    where = ctx.command_path.partition(" ")[2] if ctx is not None else ""
    hint = f" (see jobq {where} --help)" if where else " (see jobq --help)"
    message = clean(e.format_message(), limit=500)
    print(f"jobq: {where + ': ' if where else ''}{message}{hint}", file=sys.stderr)
    return e.exit_code


class PlainHelp(TyperCommand):
    """``--help`` as plain text: an option by its metavar (every option that takes a
    value names one: ``--limit N``), an argument by its name alone. Typer would add a
    type label after each argument (``ID <int>``)."""

    def format_options(self, ctx: ClickContext, formatter: HelpFormatter) -> None:
        args: list[tuple[str, str]] = []
        opts: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                args.append((param.metavar or param.name.upper(), record[1]))
            else:
                opts.append(record)
        for title, rows in (("Arguments", args), ("Options", opts)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


# rich_markup_mode=None: plain help, without a "<bool>" after every flag.
app = typer.Typer(cls=OneLineErrors, no_args_is_help=True, add_completion=False,
                  pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="jobq: a background job queue on SQLite or PostgreSQL.")
command = functools.partial(app.command, cls=PlainHelp)

command()(produce.enqueue)
command()(run.run)
command()(admin.stats)
command("list")(admin.list_jobs)
command()(admin.show)
command()(admin.why)
command()(admin.workers)
command()(admin.retry)
command()(admin.cancel)
command()(admin.reap)
command()(admin.prune)
command()(upkeep.retention)
command()(upkeep.migrate)
command()(upkeep.health)
command()(metrics.metrics)
command()(controls.queues)
command()(controls.pause)
command()(controls.resume)
command()(controls.limit)
command()(controls.schedules)
command()(copy.copy)
command()(demo.demo)
command()(bench.bench)
command()(web.web)


@command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@friendly
def tui(ctx: typer.Context, db: DbOption = DEFAULT_DB) -> None:
    """Open the live monitor (jobq-tui) on the database.

    Other options go to jobq-tui: --interval DURATION, --read-only, --beat DURATION."""
    from jobq_tui.main import main as tui_main
    from jobq_tui.main import parser

    args = [str(db), *ctx.args]
    check = parser()
    # argparse: usage, then exit 2. Its one hook for that is replacing the parser's error
    # method, which the checker refuses for any method (jobq_tui builds the parser).
    check.error = functools.partial(_refuse_tui_args, ctx)  # type: ignore[method-assign]
    check.parse_args(args)
    with open_queue(db, read_only=True):  # a missing or foreign database: one line, exit 1
        pass
    raise typer.Exit(tui_main(args))


def _refuse_tui_args(ctx: typer.Context, message: str) -> NoReturn:
    raise _USAGE_ERROR(message, ctx=ctx)


def _print_version(asked: bool) -> None:
    if asked:
        from jobq_tui.main import version  # one lookup for both programs

        print(f"jobq {version()}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version,
        help="Print the installed jobq's version and exit.")] = False,
) -> None:
    """jobq: a background job queue on SQLite or PostgreSQL."""


def _one_line_warning(message: Warning | str, category: type[Warning], filename: str,
                      lineno: int, line: str | None = None) -> str:
    """Warnings (a database on a network filesystem) as one plain line, not a source dump."""
    return f"jobq: warning: {message}\n"


def main(argv: list[str] | None = None) -> int:
    warnings.formatwarning = _one_line_warning
    try:
        app(args=argv, prog_name="jobq")
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
