"""The `/` filter: free words plus ``queue:`` ``kind:`` ``worker:`` ``error:`` ``status:``.

``queue:mail kind:send error:"connection refused" timeout`` narrows the database query by
queue, kind and error text and keeps rows where every free word appears (case-insensitive)
in one of the shown fields. Values with spaces are quoted. Pure data: no Textual here.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from jobq_core import LIST_STATUSES, ErrorGroup

PREFIXES = ("queue", "kind", "worker", "error", "status")


class FilterError(ValueError):
    """The filter text cannot be parsed; the message says why, for the status line."""


@dataclass(frozen=True)
class Filter:
    queue: str | None = None
    kind: str | None = None
    worker: str | None = None
    error: str | None = None
    status: str | None = None
    words: tuple[str, ...] = field(default=())
    text: str = ""
    group: str | None = None  # a dead group's key (``group_key``): exactly its jobs

    @property
    def empty(self) -> bool:
        return not self.text.strip()

    def matches(self, *fields: object) -> bool:
        """Whether every free word occurs in at least one of ``fields``."""
        if not self.words:
            return True
        hay = " ".join("" if f is None else str(f) for f in fields).casefold()
        return all(w.casefold() in hay for w in self.words)


def parse_filter(text: str) -> Filter:
    """Parse filter text; raises ``FilterError`` with a readable reason."""
    try:
        tokens = shlex.split(text)
    except ValueError as e:
        raise FilterError(f"filter: {e}") from None
    values: dict[str, str] = {}
    words: list[str] = []
    for token in tokens:
        name, sep, value = token.partition(":")
        if sep and name.lower() in PREFIXES:
            if not value:
                raise FilterError(f"filter: {name}: needs a value")
            values[name.lower()] = value
        else:
            words.append(token)
    status = values.get("status")
    if status is not None and status not in LIST_STATUSES:
        raise FilterError(f"filter: status must be one of {', '.join(LIST_STATUSES)}")
    return Filter(values.get("queue"), values.get("kind"), values.get("worker"),
                  values.get("error"), status, tuple(words), text.strip())


def group_filter(g: ErrorGroup) -> Filter:
    """The filter that selects the dead jobs of a group: its kind, ``error:`` its
    ``match`` (which the database narrows by) and its ``key`` (which tells the group from
    others whose errors start alike), with text to show in the status line."""
    return Filter(kind=g.kind, error=g.match or None, group=g.key or None,
                  text=_filter_text(kind=g.kind, error=g.match))


def _filter_text(**terms: str | None) -> str:
    parts = []
    for name, value in terms.items():
        if value:
            if not any(c in value for c in " \t\"'\\"):
                parts.append(f"{name}:{value}")
            elif '"' not in value and "\\" not in value:
                parts.append(f'{name}:"{value}"')
            else:
                parts.append(f"{name}:{shlex.quote(value)}")
    return " ".join(parts)
