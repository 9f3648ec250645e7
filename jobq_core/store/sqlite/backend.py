"""The SQLite backend: one WAL-mode database file, and ``SqliteStore``, the engine on it.

Concurrency model: any number of processes may open the same file. Each store owns one
connection, guarded by a lock so that threads of one process may share it. Writers are
serialised by SQLite itself; every multi-statement write runs inside ``transaction``
(``BEGIN IMMEDIATE``). A single write statement in autocommit mode takes the write lock
when it starts, so it needs no explicit transaction.
"""
from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

from ...common.checks import check_seconds
from ...common.filesystem import file_identity, filesystem_type, moved
from ...errors import DatabaseUnavailable
from .. import opening
from ..backend import KeyTaken
from ..base import ConnectionIdentity
from ..engine import Engine
from . import app_connection
from .connection import (
    MEMORY, SYNCHRONOUS_MODES, connect, error_code, set_pragmas, stopped_lock_holders, translate,
    warn_if_network, write_transaction,
)
from .dialect import DIALECT, claim_sql
from .schema import SCHEMA_VERSION, installed_version, rate_trigger
from .schema import migrate as migrate_schema
from .watch import SqliteEndWatch, SqliteWatch

T = TypeVar("T")
_UNIQUE = getattr(sqlite3, "SQLITE_CONSTRAINT_UNIQUE", 2067)


class SqliteBackend:
    name = app_connection.STORE
    app = app_connection
    notifies = False  # a watch sees every commit to the file (inotify + data_version)

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "NORMAL",
                 busy_timeout: float = 30.0, read_only: bool = False, create: bool = True,
                 migrate: bool = True):
        synchronous = opening.choice("synchronous", synchronous, SYNCHRONOUS_MODES)
        check_seconds("busy_timeout", busy_timeout)
        self.path = self.where = os.fspath(path)
        self.synchronous = synchronous
        self.read_only = read_only
        self.dialect = DIALECT
        self._pid = os.getpid()  # SQLite connections must not cross a fork
        self._lock = threading.RLock()
        self.frozen = False  # True: an immutable snapshot that cannot see later changes
        # ":memory:": a database of this store's one connection (tests); nothing else,
        # no other process, no application connection, no worker child, can reach it.
        self.in_memory = self.path == MEMORY
        self.location = self.path if self.in_memory else os.path.realpath(self.path)
        if self.in_memory and read_only:
            raise ValueError("an in-memory database cannot be opened read-only: it would "
                             "be a new, empty one")
        if not self.in_memory:
            warn_if_network(self.path)
        self._conn = connect(self.path, busy_timeout, read_only, create and not read_only)
        try:
            try:
                version = installed_version(self._conn, self.path)
            except sqlite3.OperationalError as e:
                if not (read_only and error_code(e) == sqlite3.SQLITE_CANTOPEN):
                    raise
                # A WAL database in a directory we cannot write (no -shm to share): read
                # it as an immutable snapshot rather than not at all.
                self._conn.close()
                self._conn = connect(self.path, busy_timeout, read_only, False, immutable=True)
                self.frozen = True
                version = installed_version(self._conn, self.path)
            migrating = opening.needs_migration(self.path, version, SCHEMA_VERSION, read_only,
                                                create, migrate)
            if not read_only:
                set_pragmas(self._conn, self.path, synchronous)
            if migrating:
                with write_transaction(self._conn):
                    migrate_schema(self._conn)
        except sqlite3.Error as e:
            self._conn.close()
            raise translate(e, self.path) from e
        except BaseException:
            self._conn.close()
            raise
        # the file opened, for check()
        self._identity = None if self.in_memory else file_identity(self.path)

    # -- running operations --------------------------------------------------------------

    def run(self, op: Callable[[sqlite3.Connection, bool], T]) -> T:
        if self._pid != os.getpid():
            raise DatabaseUnavailable(
                f"{self.path}: this Queue was opened before a fork; using its connection in "
                "the child could corrupt the database: open a new Queue in each process")
        with self._lock:
            try:
                return op(self._conn, False)
            except sqlite3.Error as e:
                raise translate(e, self.path) from e

    def transaction(self, c: sqlite3.Connection) -> AbstractContextManager[sqlite3.Connection]:
        return write_transaction(c)

    @contextmanager
    def snapshot(self, c: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        c.execute("BEGIN")
        try:
            yield c
        finally:
            if c.in_transaction:
                c.execute("COMMIT")

    @contextmanager
    def savepoint(self, c: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        c.execute("SAVEPOINT jobq")
        try:
            yield c
        except BaseException as e:
            if c.in_transaction:
                c.execute("ROLLBACK TO jobq")
                c.execute("RELEASE jobq")
            if isinstance(e, sqlite3.IntegrityError) and getattr(
                    e, "sqlite_errorcode", None) == _UNIQUE:
                raise KeyTaken(str(e)) from None
            raise
        c.execute("RELEASE jobq")

    def notify(self, c: sqlite3.Connection, queues: Iterable[str]) -> None:
        pass

    def limits_changed(self, c: sqlite3.Connection) -> None:
        rate_trigger(c)

    def due(self, queues: Iterable[str]) -> list[str]:
        return []

    # -- the application's connection (see app_connection.py) ---------------------------

    def same_database(self, identity: ConnectionIdentity) -> bool:
        return identity.store == self.name and identity.key == self._identity

    def mismatch(self, identity: ConnectionIdentity) -> str:
        return ""

    # -- the rest -------------------------------------------------------------------------

    def watch(self, *, poll_interval: float = 0.02) -> SqliteWatch:
        """A change signal: inotify on the database's files where the OS has it, confirmed
        by ``PRAGMA data_version``; where it has not, ``data_version`` polled every
        ``poll_interval`` seconds. Commits through this store's own connection do not count."""
        return SqliteWatch(self, poll_interval)

    def watch_ends(self) -> SqliteEndWatch:
        """A signal for ended jobs (``Queue.wait``): the change signal, with
        ``data_version`` read on a read-only connection of its own, so that commits through
        this store's connection count too."""
        own = None if self.in_memory or self.frozen else connect(self.path, 5.0, True, False)
        return SqliteEndWatch(self, 0.02, own)

    def data_version(self) -> int:
        """Changes whenever another connection commits (``SqliteWatch`` reads it)."""
        return self.run(lambda c, _again: int(c.execute("PRAGMA data_version").fetchone()[0]))

    def server_clock(self) -> None:
        return None  # one machine: its own clock is the one

    def describe(self) -> dict[str, str | None]:
        return {"store": self.name, "sqlite": sqlite3.sqlite_version, "path": self.path,
                "filesystem": None if self.in_memory else filesystem_type(self.path), "synchronous": self.synchronous}

    def write_blockers(self) -> list[str]:
        return stopped_lock_holders(self.path)

    def check(self) -> None:
        what = None if self._identity is None else moved(self.path, self._identity)
        if what is not None:
            raise DatabaseUnavailable(f"{self.path}: the database file {what}")

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class SqliteStore(Engine[sqlite3.Connection]):
    """jobq on one SQLite file: the engine over ``SqliteBackend`` (its options)."""

    backend: SqliteBackend

    def __init__(self, path: str | os.PathLike[str], **options: Any):  # SqliteBackend's
        super().__init__(SqliteBackend(path, **options))
        self.path = self.backend.path
        self.synchronous = self.backend.synchronous
        self.read_only = self.backend.read_only

    @property
    def _conn(self) -> sqlite3.Connection:
        return self.backend._conn

    def data_version(self) -> int:
        return self.backend.data_version()

    def integrity_check(self) -> str:
        return self.backend.run(lambda c, _again: "; ".join(
            r[0] for r in c.execute("PRAGMA integrity_check")))

    def explain_claim(self, queues: Sequence[str] | None = None, limit: int = 1) -> list[str]:
        """The query plan of the claim statement (tests assert it uses the partial index)."""
        queues = list(queues or [])

        def op(c: sqlite3.Connection, _again: bool) -> list[str]:
            per_queue = not queues and self._controls.get(
                lambda: c.execute(self.statements.CONTROL_STATE).fetchall()).busy
            query = "EXPLAIN QUERY PLAN " + claim_sql(len(queues), limit == 1, per_queue)
            return [r[3] for r in c.execute(query, [0.0, "w", 0.0, limit, *queues])]

        return self.backend.run(op)

