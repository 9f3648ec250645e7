"""What both stores keep in memory about queue controls: the names of the limited queues.

A claim on every queue gives each limited queue an arm of its own in the statement (see
each store's ``claim_sql``), so the statement's shape depends on how many there are. The
list is re-read at most every ``TTL`` seconds, and at once after this store changed a
control. A stale list is safe: the claim statement reads the controls themselves, and a
queue limited since the list was read is left out of that claim, never overrun; so a new
limit or pause holds at once, and a queue limited elsewhere is claimed from again within
``TTL`` seconds.
"""
from __future__ import annotations

import time
from collections.abc import Callable

TTL = 1.0


class LimitedQueues:
    def __init__(self) -> None:
        self._names: tuple[str, ...] = ()
        self._due = 0.0  # monotonic time of the next read

    def names(self, read: Callable[[], list[str]]) -> tuple[str, ...]:
        """The names, from ``read()`` (on the caller's connection) when they are due."""
        now = time.monotonic()
        if now >= self._due:
            self._names = tuple(read())
            self._due = now + TTL
        return self._names

    def forget(self) -> None:
        """Read again before the next claim (this store changed a control)."""
        self._due = 0.0
