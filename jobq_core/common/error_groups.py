"""What an error says, and which dead jobs failed the same way: rules every store shares.

* ``error_line``: the line of an error that says what went wrong — its first line, or for a
  Python traceback its last line (the exception).
* ``group_key``: an error line with the parts that differ from job to job of one failure
  folded to ``#``: long numbers (4 digits or more: invoice, order and job numbers, ports,
  pids), hex ids with a digit in them (``9f2e0a1c``, a UUID, ``ab12``), decimals, dates,
  clock times and durations (``42s``, ``1m05s``). Short numbers stay: they carry meaning (an
  HTTP status, an errno, an exit code), so ``HTTP 502 ... INV-59476`` and
  ``HTTP 404 ... INV-59480`` are different failures.
* ``group_dead``: dead jobs of one kind with the same ``group_key`` form one
  ``ErrorGroup`` (``HTTP 502 for invoice INV-59476`` and ``... INV-59480`` are one group),
  so one bad deploy is one row with a count.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..types import ErrorGroup

_FOLD = re.compile(r"""
    \d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?     # dates, timestamps
  | \d+(?:\.\d+)+                                   # decimals, versions
  | \b\d{1,2}:\d{2}(?::\d{2})?\b                    # clock times
  | \b\d+(?:ms|[smhd])(?:\d+(?:ms|[smhd]))*\b        # durations: 42s, 1m05s, 350ms
  | \b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{4,}\b # hex ids: ab12, 9f2e0a1c, UUID parts
  | \d{4,}                                          # long numbers: ids, not meanings
""", re.VERBOSE | re.IGNORECASE)


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


def group_key(error: object) -> str:
    """What jobs that failed the same way share: their error line (``error_line``) with
    the parts that vary from job to job folded (see the module's description)."""
    return _FOLD.sub("#", error_line(error))


@dataclass
class _Group:
    """An ErrorGroup while its rows are added up."""

    kind: str
    line: str
    count: int
    last_finished_at: float
    last_id: int
    queues: set[str]
    match: str
    key: str


def group_dead(
    rows: Iterable[tuple[str, str, int, float, int, Iterable[str]]], limit: int,
) -> list[ErrorGroup]:
    """Merge pre-aggregated dead jobs into ``ErrorGroup``s, largest first, at most ``limit``.

    Each row is ``(kind, error, count, last_finished_at, last_id, queues)`` for some jobs
    that share ``error`` (a store may pass just an error's first line and its tail, where
    a traceback's exception line is: ``error_line`` only reads those).
    """
    groups: dict[tuple[str, str], _Group] = {}
    for kind, error, n, finished, last_id, queues in rows:
        line = error_line(error)
        key = _FOLD.sub("#", line)
        g = groups.get((kind, key))
        if g is None:
            g = groups[kind, key] = _Group(
                kind=kind, line=line, count=0, last_finished_at=finished, last_id=last_id,
                queues=set(), match=_FOLD.split(line, 1)[0], key=key)
        g.count += n
        g.queues.update(queues)
        if last_id > g.last_id:
            g.line, g.last_id, g.last_finished_at = line, last_id, finished
    out = [ErrorGroup(kind=g.kind, line=g.line, count=g.count,
                      last_finished_at=g.last_finished_at, last_id=g.last_id,
                      queues=tuple(sorted(g.queues)), match=g.match.strip() or g.line,
                      key=g.key)
           for g in groups.values()]
    out.sort(key=lambda g: (-g.count, -g.last_finished_at))
    return out[:limit]
