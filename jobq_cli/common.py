"""Pieces every command shares: the --db option, opening the queue, one-line errors,
duration options and JSON output.

Invariant: a user error (bad input, missing database, unknown job) ends the command with
one line on stderr and exit status 1, never a traceback, and nothing written.
"""
from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Annotated, Any, NoReturn, ParamSpec, TypeVar, cast

import typer

from jobq_core import JobqError, Queue
from jobq_core.presentation.display import parse_duration
from jobq_core.common.textsafe import clean

DbOption = Annotated[
    str,  # not a Path: that would fold the // of a URL
    typer.Option("--db", envvar="JOBQ_DB", metavar="DATABASE",
                 help="Database: a file path, sqlite:///path or postgresql://user@host/db "
                      "(default: $JOBQ_DB, else ./jobs.db)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
DEFAULT_DB = "jobs.db"
INT64_MAX = 2**63 - 1  # the stores keep integers in 64 bits: a count option's ceiling, so a
# larger value is a usage error (exit 2) and not a store's refusal (exit 1)


class UserError(Exception):
    """Bad input (a bad stdin line, an unknown job): reported as one line, exit status 1."""


class UsageError(UserError):
    """The command line itself is wrong (arguments that do not go together, a bad
    duration): reported as one line, exit status 2."""


def fail(message: str) -> NoReturn:
    raise UserError(message)


def usage(message: str) -> NoReturn:
    raise UsageError(message)


P = ParamSpec("P")
R = TypeVar("R")


def friendly(command: Callable[P, R]) -> Callable[P, R]:
    """Turn the errors a user can cause into ``jobq: <message>`` on stderr and exit 1. A
    usage error goes on up: the command group says it as it says Click's, naming the
    command (``jobq: list: ... (see jobq list --help)``), and exits 2."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except UsageError:
            raise
        except (UserError, JobqError, ValueError, TypeError, OSError) as e:
            message = str(e) or type(e).__name__
            print(f"jobq: {clean(message, limit=2000)}", file=sys.stderr)
            raise typer.Exit(1) from None

    return wrapper


def open_queue(db: str, *, create: bool = False, **kwargs: Any) -> Queue:
    """Open the database. Commands that only read or administer pass ``create=False``,
    so a mistyped path is reported instead of silently creating an empty database."""
    return Queue(db, create=create, **kwargs)


def duration_option(value: object) -> float:
    """Typer's parser for a duration option: a bad one is a usage error (exit 2)."""
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return parse_duration(str(value))
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None


def Duration(help: str, *names: str) -> Any:  # noqa: N802 - reads as a type
    """A duration option (``--delay 1h``, ``--window 90s``): the same forms everywhere.
    Give its default as the text a user would type (``= typed("30s")``): the parser turns
    it into seconds, and ``--help`` shows it as written."""
    return typer.Option(*names, parser=duration_option, metavar="DURATION", help=help)


def typed(text: str) -> float:
    """A duration option's default, as a user would type it. Typer passes a default
    through the option's parser as it does typed text, so the command receives seconds:
    the cast says what the parser makes true by the time the command runs."""
    return cast(float, text)


def parse_json(text: str, what: str, report: Callable[[str], NoReturn] = fail) -> Any:
    """JSON from the command line (``report=usage``) or from stdin (``fail``)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        report(f"{what} is not valid JSON: {e}")
    except RecursionError:
        report(f"{what} is nested too deeply to read")


def print_json(value: Any) -> None:
    """JSON on stdout. ASCII-only, so no database string can put raw control or
    bidi characters on a terminal. A value JSON has no type for (bytes another program
    wrote into a column) is written as its Python repr, a string."""
    sys.stdout.write(json.dumps(value, ensure_ascii=True, allow_nan=False, default=repr)
                     + "\n")
