"""jobq's writes on an application's own connection, inside its transaction:
transactional enqueue and fenced transactional completion, written once for every store.

A backend's ``app_connection.py`` keeps what is its own: ``identity`` (which connections
can take jobq's write, and which database they reach), how the application's connection
is wrapped to hand out plain tuple rows (``cursor``), what its driver's errors become
(``failed``) and how idle workers hear of new jobs when the caller commits (``notify``);
then ``AppWrites`` makes ``insert_many``, ``complete`` and ``on_app`` of them.

Nothing here holds a connection of jobq's: a process pool's child runs these on its own
application connection (``identity`` there, ``same_database`` in the worker, then the
write with the worker's time). jobq never commits or rolls back.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, NoReturn, TypeVar

from ..types import NewJob
from .base import Completion
from .dbapi import Connection
from .ops import writes

A = TypeVar("A", bound=Connection)
E = TypeVar("E", bound=Exception)
T = TypeVar("T")


class AppWrites(Generic[A, E]):
    """``cursor(conn)``: the application's connection as the engine uses one of the
    store's own; ``failed(conn, e)`` raises jobq's error for the driver's ``e`` (an
    ``error``); ``plain``: how jobs without a unique key go in (``insert_plain`` unless
    given)."""

    def __init__(self, dialect: writes.Inserts[A], cursor: Callable[[Any], A],
                 error: type[E], failed: Callable[[Any, E], NoReturn],
                 notify: Callable[[A, Iterable[str]], None],
                 plain: Callable[[A, Sequence[NewJob], float, list[str]], list[int]] | None = None):
        self.dialect, self.cursor, self.error, self.failed = dialect, cursor, error, failed
        self.notify, self.plain = notify, plain

    def insert_many(self, conn: Any, jobs: Sequence[NewJob], now: float) -> list[int]:
        """Insert ``jobs`` in the caller's transaction (``writes.insert_jobs``), with the
        wake-up of their queues sent when it commits; their ids, in order."""
        def op(c: A) -> list[int]:
            ids = writes.insert_jobs(c, self.dialect, jobs, now, self.plain)
            self.notify(c, {j.queue for j in jobs})
            return ids

        return self.on_app(conn, op)

    def complete(self, conn: Any, completion: Completion, now: float) -> bool:
        """The fenced completion in the caller's transaction, with the settling of the
        job's dependents (idle workers hear of those released when it commits); False:
        fenced out (nothing written)."""
        return self.on_app(conn, lambda c: writes.complete(
            c, self.dialect.statements, completion, now, released=self.notify))

    def on_app(self, conn: Any, op: Callable[[A], T]) -> T:
        """``op(cursor(conn))`` with the driver's errors translated into jobq's."""
        try:
            return op(self.cursor(conn))
        except self.error as e:
            self.failed(conn, e)
