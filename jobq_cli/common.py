"""Pieces every command shares: the --db option, opening the queue, one-line errors,
duration parsing and JSON output.

Invariant: a user error (bad input, missing database, unknown job) ends the command with
one line on stderr and exit status 1, never a traceback, and nothing written.
"""
from __future__ import annotations

import functools
import json
import re
import sys
from typing import Annotated, Any, NoReturn

import typer

from jobq_core import JobqError, Queue
from jobq_core.textsafe import clean

DbOption = Annotated[
    str,  # not a Path: that would fold the // of a URL
    typer.Option("--db", envvar="JOBQ_DB", metavar="DATABASE",
                 help="Database: a file path, sqlite:///path or postgresql://user@host/db "
                      "(default: $JOBQ_DB, else ./jobs.db)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
DEFAULT_DB = "jobs.db"


class UserError(Exception):
    """Bad input from the command line: reported as one line, exit status 1."""


def fail(message: str) -> NoReturn:
    raise UserError(message)


def friendly(command):
    """Turn the errors a user can cause into ``jobq: <message>`` on stderr and exit 1."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except (UserError, JobqError, ValueError, TypeError, OSError) as e:
            message = str(e) or type(e).__name__
            print(f"jobq: {clean(message, limit=2000)}", file=sys.stderr)
            raise typer.Exit(1) from None

    return wrapper


def open_queue(db: str, *, create: bool = False, **kwargs: Any) -> Queue:
    """Open the database. Commands that only read or administer pass ``create=False``,
    so a mistyped path is reported instead of silently creating an empty database."""
    return Queue(db, create=create, **kwargs)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw]?)")


def parse_duration(text: str) -> float:
    """'90', '90s', '15m', '12h', '7d', '2w' or a sum like '1h30m' -> seconds."""
    s = text.strip().lower()
    parts = _DURATION.findall(s) if s else []
    if not parts or "".join(n + u for n, u in parts) != s:
        fail(f"bad duration {text!r}: use a number with a unit, like 90s, 15m, 12h, 7d or 2w")
    return sum(float(n) * _UNITS[u or "s"] for n, u in parts)


def parse_json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        fail(f"{what} is not valid JSON: {e}")
    except RecursionError:
        fail(f"{what} is nested too deeply to read")


def print_json(value: Any) -> None:
    """JSON on stdout. ASCII-only, so no database string can put raw control or
    bidi characters on a terminal. A value JSON has no type for (bytes another program
    wrote into a column) is written as its Python repr, a string."""
    sys.stdout.write(json.dumps(value, ensure_ascii=True, allow_nan=False, default=repr)
                     + "\n")
