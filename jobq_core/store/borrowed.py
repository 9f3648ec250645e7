"""A store on a connection the application lends: every operation runs on the
application's own connection, inside a transaction the application owns.

Made for a framework that keeps one connection per thread and wraps each test in a
transaction it rolls back (Django's ``TestCase``): jobs enqueued in a test are in that
test's transaction, and only a queue reading on the same connection sees them. A
``Borrowed`` backend wraps a store's own backend and takes from it everything but the
connection: its dialect, its statements, its error translation (``app.on_app``) and its
wake-up (``app.notify``). The own backend opens a connection only for what needs one of
its own: ``check()`` (creating the tables), ``watch()``, and ``conn=`` checks.

``lend()`` is a context manager that yields the driver connection inside a transaction
(joining one that is open): what each operation writes commits or rolls back with it.
Reads inside it are one transaction too, so ``snapshot`` adds none. Times are this
machine's (``server_clock`` is None): the server's would need a read of its own.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

from ..clock import Clock
from ..types import Watch
from .backend import AppConnection, Backend
from .base import ConnectionIdentity, EndWatch
from .dialect import Dialect

T = TypeVar("T")
Lend = Callable[[], AbstractContextManager[Any]]


class Borrowed:
    """``own``'s backend with each operation run on the connection ``lend()`` yields."""

    def __init__(self, own: Backend[Any], lend: Lend):
        self.own = own
        self._lend = lend

    @property
    def name(self) -> str:
        return self.own.name

    @property
    def where(self) -> str:
        return self.own.where

    @property
    def location(self) -> str:
        return self.own.location

    @property
    def dialect(self) -> Dialect[Any]:
        return self.own.dialect

    @property
    def notifies(self) -> bool:
        return self.own.notifies

    @property
    def frozen(self) -> bool:
        return False

    @property
    def app(self) -> AppConnection:
        return self.own.app

    def run(self, op: Callable[[Any, bool], T]) -> T:
        with self._lend() as conn:
            return self.own.app.on_app(conn, lambda c: op(c, False))

    def transaction(self, conn: Any) -> AbstractContextManager[object]:
        return self.own.transaction(conn)  # joins the lent one

    def snapshot(self, conn: Any) -> AbstractContextManager[object]:
        return nullcontext(conn)  # the lent transaction is the snapshot

    def savepoint(self, conn: Any) -> AbstractContextManager[object]:
        return self.own.savepoint(conn)

    def notify(self, conn: Any, queues: Iterable[str]) -> None:
        self.own.app.notify(conn, queues)  # no per-queue limit: the commit is the lender's

    def limits_changed(self, conn: Any) -> None:
        self.own.limits_changed(conn)

    def due(self, queues: Iterable[str]) -> list[str]:
        return sorted(queues) if self.own.notifies else []

    def same_database(self, identity: ConnectionIdentity) -> bool:
        return self.own.same_database(identity)

    def mismatch(self, identity: ConnectionIdentity) -> str:
        return self.own.mismatch(identity)

    def watch(self) -> Watch:
        return self.own.watch()

    def watch_ends(self) -> EndWatch:
        return self.own.watch_ends()

    def server_clock(self) -> Clock | None:
        return None

    def describe(self) -> dict[str, str | None]:
        return self.own.describe()

    def write_blockers(self) -> list[str]:
        return self.own.write_blockers()

    def check(self) -> None:
        self.own.check()

    def close(self) -> None:
        self.own.close()
