"""The `/` filter: free words plus ``queue:`` ``kind:`` ``worker:`` ``error:`` ``status:``
``key:`` (a concurrency key, exactly) and ``scope:all``.

``queue:mail kind:send error:"connection refused" timeout`` narrows the database query:
queues and kinds that start with ``mail`` and ``send``, errors containing the text, and
jobs where every free word appears (in any case) in the id, kind, queue, worker or error,
so a search reaches jobs beyond the rows loaded. No index serves a text search: among
all jobs, or the finished ones, it reads the newest ``SEARCH_NEWEST`` (``search_window``),
so that it answers in a bounded time however long the history; ``scope:all`` reads every
job. Values with spaces are quoted.
``#123`` (or ``id:123``) is not a filter but a job to open (``job_ref``). Pure data, shared by
every front end.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from ...types import LIST_STATUSES, ErrorGroup

PREFIXES = ("queue", "kind", "worker", "error", "status", "key", "scope")
SEARCH_NEWEST = 50_000
"""Jobs a text search reads among all (or the finished) jobs, newest first, unless the
filter says ``scope:all``: about 60 ms of a scan on SQLite, and less on PostgreSQL
(``bench/web_scale.py``)."""


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
    prefix: bool = True  # queue and kind match names that start with them (False: exact)
    key: str | None = None  # a concurrency key: its jobs only
    everything: bool = False  # ``scope:all``: a text search reads every job

    @property
    def empty(self) -> bool:
        return not self.text.strip()

    def names(self, queue: str | None, kind: str | None) -> bool:
        """Whether a queue and kind pass the ``queue:`` and ``kind:`` terms."""
        return _name_ok(self.queue, queue, self.prefix) and _name_ok(self.kind, kind, self.prefix)

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
    scope = values.get("scope")
    if scope is not None and scope.lower() != "all":
        raise FilterError("filter: scope: must be all (a search then reads every job)")
    return Filter(values.get("queue"), values.get("kind"), values.get("worker"),
                  values.get("error"), status, tuple(words), text.strip(),
                  key=values.get("key"), everything=scope is not None)


def search_window(filt: Filter, status: str | None) -> int | None:
    """How many of the newest jobs the filter's database read of ``status`` (None: all)
    looks at: ``SEARCH_NEWEST`` for a text search (free words, ``error:``) among all jobs
    or the finished ones, whose history has no bound; None (every job) otherwise, with
    ``scope:all``, or where an index bounds the read (pending, running, waiting and dead
    jobs)."""
    if filt.everything or not (filt.words or filt.error):
        return None
    return SEARCH_NEWEST if status in (None, "succeeded", "cancelled") else None


def group_filter(g: ErrorGroup, words: tuple[str, ...] = ()) -> Filter:
    """The filter that selects the dead jobs of a group: its kind, ``error:`` its
    ``match`` (which the database narrows by) and its ``key`` (which tells the group from
    others whose errors start alike), with text to show in the status line. ``words``:
    the free words the groups were searched with (the group then counts only the jobs
    they find, and so do its drill-down and ``R``)."""
    text = " ".join([_filter_text(kind=g.kind, error=g.match), *map(_word_text, words)])
    return Filter(kind=g.kind, error=g.match or None, group=g.key or None, prefix=False,
                  words=tuple(words), text=text)


def job_ref(text: str) -> int | None:
    """The job id in ``#123`` or ``id:123`` (a jump to that job), else None."""
    m = re.fullmatch(r"\s*(?:#|id:)\s*(\d{1,19})\s*", text)
    return int(m.group(1)) if m else None


def _name_ok(term: str | None, name: str | None, prefix: bool) -> bool:
    if term is None:
        return True
    return (name or "").startswith(term) if prefix else name == term


def _word_text(word: str) -> str:
    return shlex.quote(word) if any(c in word for c in " \t\"'\\") else word


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
