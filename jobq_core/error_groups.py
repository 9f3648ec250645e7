"""What an error says, and which dead jobs failed the same way: rules every store shares.

* ``error_line``: the line of an error that says what went wrong — its first line, or for a
  Python traceback its last line (the exception).
* ``group_dead``: dead jobs of one kind whose error lines are equal once numbers are
  ignored form one ``ErrorGroup`` (``HTTP 502 for invoice INV-59476`` and ``... INV-59480``
  are one group), so one bad deploy is one row with a count.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from .types import ErrorGroup

_DIGITS = re.compile(r"\d+")


def first_line(value: object) -> str:
    """The first line of a (multi-line) error, stripped; '' for None."""
    if value is None:
        return ""
    s = str(value).strip()
    return s.split("\n", 1)[0].rstrip("\r")


def error_line(error: object) -> str:
    """The line of an error that says what went wrong: its first line, or for a Python
    traceback (which starts "Traceback") its last non-blank line, the exception."""
    line = first_line(error)
    if line.startswith("Traceback"):
        lines = [ln for ln in str(error).splitlines() if ln.strip()]
        if lines:
            return lines[-1].strip()
    return line


def group_dead(
    rows: Iterable[tuple[str, str, int, float, int, Iterable[str]]], limit: int,
) -> list[ErrorGroup]:
    """Merge pre-aggregated dead jobs into ``ErrorGroup``s, largest first, at most ``limit``.

    Each row is ``(kind, error, count, last_finished_at, last_id, queues)`` for some jobs
    that share ``error`` (a store may pass just an error's first line and its tail, where
    a traceback's exception line is: ``error_line`` only reads those).
    """
    groups: dict[tuple[str, str], dict] = {}
    for kind, error, n, finished, last_id, queues in rows:
        line = error_line(error)
        g = groups.setdefault((kind, _DIGITS.sub("#", line)), {
            "kind": kind, "line": line, "count": 0, "last_finished_at": finished,
            "last_id": last_id, "queues": set(), "match": _DIGITS.split(line, 1)[0],
        })
        g["count"] += n
        g["queues"].update(queues)
        if last_id > g["last_id"]:
            g.update(line=line, last_id=last_id, last_finished_at=finished)
    out = [ErrorGroup(**{**g, "queues": tuple(sorted(g["queues"])),
                         "match": g["match"].strip() or g["line"]})
           for g in groups.values()]
    out.sort(key=lambda g: (-g.count, -g.last_finished_at))
    return out[:limit]
