"""What a backend provides to the engine: connections, transactions, errors and signals.

The engine (``store/ops/``) holds every job operation's policy, once; it reaches a
database only through a ``Backend`` and its ``Dialect``. A third database needs a backend
(this protocol), a dialect (``store/dialect.py``), a schema and a watch — see
``docs/adding-a-store.md``.

Every operation is a function ``op(conn, again)`` handed to ``run``. ``conn`` is the
driver's connection, used as a DB-API executor: ``conn.execute(sql, params)`` returns a
cursor with ``fetchone``, ``fetchall`` and ``rowcount`` (``store.dbapi.Connection``, all
the operations may use of it). Outside ``transaction`` each
statement commits on its own (autocommit), so a one-statement operation costs one round
trip and no BEGIN.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from ..clock import Clock
from ..errors import JobqError
from ..types import NewJob, Watch
from .base import Completion, ConnectionIdentity, EndWatch
from .dbapi import C
from .dialect import Dialect

T = TypeVar("T")


class AppConnection(Protocol):
    """An ``app_connection.py``: each function on an application's connection, in its
    transaction, never committing; ``UnusableConnection`` when it cannot take the write."""

    def identity(self, conn: object) -> ConnectionIdentity: ...

    # conn: the application's connection of this backend's driver (Any: the engine checks
    # it with identity() and same_database() before it calls these)
    def insert_many(self, conn: Any, jobs: Sequence[NewJob], now: float) -> list[int]: ...

    def complete(self, conn: Any, completion: Completion, now: float) -> bool: ...

    def on_app(self, conn: Any, op: Callable[[Any], T]) -> T:
        """``op`` on ``conn`` as the engine uses a connection of the store's own (plain
        tuple rows), with the driver's errors translated into jobq's."""
        ...

    def notify(self, conn: Any, queues: Iterable[str]) -> None:
        """Inside the caller's transaction (``conn`` as ``on_app`` hands it to ``op``):
        wake idle workers of ``queues`` when it commits."""
        ...


class KeyTaken(JobqError):
    """A write met the unique index of live jobs' keys (raised by ``Backend.savepoint``)."""


class Backend(Protocol[C]):
    """``C``: the backend's connection type, which ``run`` hands to an operation and the
    operation hands back to ``transaction`` and the rest (``store.dbapi``)."""

    # Its attributes are read-only here (properties), as the engine only reads them: a
    # backend may keep a narrower type (its own Dialect) or compute one.
    @property
    def name(self) -> str:
        """The backend's name: ``describe()["store"]`` and ``ConnectionIdentity.store``."""
        ...

    @property
    def where(self) -> str:
        """The database, for messages (never with a password)."""
        ...

    @property
    def location(self) -> str:
        """The database, the same whichever way it was named and whoever opened it: an
        SQLite file's real path; a PostgreSQL URL's hosts, ports, database and host options
        (no user, no password). What ``jobq copy`` records of its source."""
        ...

    @property
    def dialect(self) -> Dialect[C]: ...

    @property
    def notifies(self) -> bool:
        """Whether ``notify`` sends anything (False: the engine skips working out queues)."""
        ...

    @property
    def frozen(self) -> bool:
        """True when the backend can only show a fixed copy of the data."""
        ...

    def run(self, op: Callable[[C, bool], T]) -> T:
        """``op(conn, again)`` on a connection of the backend's, with its errors translated
        into jobq's (``DatabaseUnavailable``, ``StorageFull``, ...). A backend whose
        connections can break retries ``op`` on a fresh one, with ``again`` True when an
        earlier try may have committed: ``op`` then checks what it finds instead of
        assuming a clean slate. Also runs the post-commit hook (see ``notify``)."""
        ...

    def transaction(self, conn: C) -> AbstractContextManager[object]:
        """A write transaction: committed at the end of the block, rolled back on an error.
        Inside an open transaction, joins it. Takes whatever lock keeps writers apart
        (SQLite: the file's write lock, at once)."""
        ...

    def snapshot(self, conn: C) -> AbstractContextManager[object]:
        """A read-only transaction, so that several reads see one state."""
        ...

    def savepoint(self, conn: C) -> AbstractContextManager[object]:
        """A nested block inside ``transaction`` whose failure undoes only itself; a hit
        on a unique index inside it raises ``KeyTaken``."""
        ...

    def notify(self, conn: C, queues: Iterable[str]) -> None:
        """Inside a write transaction: wake idle workers of ``queues`` when it commits
        (PostgreSQL: NOTIFY, limited per queue; SQLite: nothing, its watch sees commits)."""
        ...

    def limits_changed(self, conn: C) -> None:
        """Inside the write transaction that set or cleared a queue's limits: whatever the
        backend keeps in step with them (SQLite: the rate window's trigger, there only
        while some queue has a rate limit; PostgreSQL: nothing, its claim counts the
        window)."""
        ...

    def due(self, queues: Iterable[str]) -> list[str]:
        """The queues among ``queues`` to wake now, for a dialect that sends the signal
        inside its own statement (``Dialect.insert_plain``); [] when ``notifies`` is False."""
        ...

    # -- the application's connection (transactional enqueue and completion) ---------------

    @property
    def app(self) -> AppConnection:
        """The backend's ``app_connection`` module: jobq's writes on an application's own
        connection (the engine checks ``identity`` against ``same_database`` first)."""
        ...

    def same_database(self, identity: ConnectionIdentity) -> bool: ...

    def mismatch(self, identity: ConnectionIdentity) -> str:
        """What to add to the refusal of a connection to another database (or "")."""
        ...

    # -- the rest of ``Store`` that is the backend's alone --------------------------------

    def watch(self) -> Watch:
        """The backend's change watcher, with its defaults (a backend may take options of
        its own, such as ``poll_interval``, which ``Engine.watch`` passes on)."""
        ...

    def watch_ends(self) -> EndWatch: ...

    def server_clock(self) -> Clock | None: ...

    def describe(self) -> dict[str, str | None]: ...

    def write_blockers(self) -> list[str]: ...

    def check(self) -> None: ...

    def close(self) -> None: ...
