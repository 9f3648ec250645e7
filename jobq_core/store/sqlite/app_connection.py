"""jobq's writes on an application's own ``sqlite3.Connection``, inside its transaction
(``store/app_writes.py``): which connections may take them.

Rules, checked before anything is written (``UnusableConnection`` otherwise):

* the connection is open and reaches the queue's file: the ``main`` database of
  ``PRAGMA database_list`` has the device and inode the store opened;
* jobq's statement joins a transaction of the caller's: one is open already, or the
  connection is in Python's default (legacy) transaction mode, where the ``sqlite3``
  module itself opens one before an INSERT or UPDATE, as it would for the caller's own.
  A connection in autocommit mode (``isolation_level=None``, or ``autocommit=True`` on
  Python 3.12+) with no transaction open is refused: the write would commit on its own,
  at once, whatever the caller does next.

Ids come from ``RETURNING``, one row at a time (a transactional enqueue is an
application's handful of jobs, not a bulk load), and a job with a unique key is inserted
first and looked up only when the key is taken: in a deferred transaction a read before
the first write could see a snapshot that another connection's commit has made stale,
and the write would then fail with SQLITE_BUSY.

The price: from its first write until its commit, the caller's transaction holds the
database's write lock, and every other writer (workers' claims, completions and
heartbeats included) waits for it. Keep these transactions short.
"""
from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

from ...errors import UnusableConnection
from ..app_writes import AppWrites
from ..base import ConnectionIdentity
from .connection import SqliteConnection, translate
from .dialect import DIALECT

STORE = "sqlite"
_LEGACY = getattr(sqlite3, "LEGACY_TRANSACTION_CONTROL", -1)


def identity(conn: object) -> ConnectionIdentity:
    """The file ``conn`` reaches; ``UnusableConnection`` when it is closed, not an
    ``sqlite3.Connection``, on no file (``:memory:``), or could not take jobq's write
    inside a transaction of the caller's (see the module's rules)."""
    if not isinstance(conn, sqlite3.Connection):
        raise UnusableConnection(
            f"conn= must be the application's sqlite3.Connection to the queue's file, got "
            f"{type(conn).__module__}.{type(conn).__qualname__}; nothing was written")
    try:
        rows = _cursor(conn).execute("PRAGMA database_list").fetchall()
    except sqlite3.ProgrammingError as e:  # closed, or made in another thread
        raise UnusableConnection(f"the connection given with conn= cannot be used ({e}); "
                                 "nothing was written") from None
    except sqlite3.Error as e:
        raise translate(e, "the connection given with conn=") from e
    path = next((os.fsdecode(r[2]) for r in rows if r[1] == "main"), "")
    if not path:
        raise UnusableConnection("the connection given with conn= is to an in-memory or "
                                 "temporary database, not the queue's file; nothing was written")
    try:
        st = os.stat(path)
    except OSError as e:
        raise UnusableConnection(f"the connection given with conn= is to {path}, which "
                                 f"cannot be read ({e.strerror}); nothing was written") from None
    _check_transaction(conn, path)
    return ConnectionIdentity(STORE, (st.st_dev, st.st_ino), path)


def _check_transaction(conn: sqlite3.Connection, path: str) -> None:
    if conn.in_transaction:
        return
    autocommit = getattr(conn, "autocommit", _LEGACY)  # Python 3.12+
    if autocommit is True or (autocommit == _LEGACY and conn.isolation_level is None):
        raise UnusableConnection(
            f"the connection given with conn= ({path}) is in autocommit mode with no "
            "transaction open, so jobq's write would commit on its own at once: open one "
            "first (conn.execute('BEGIN IMMEDIATE')); nothing was written")


class AppCursor:
    """The application's connection as the engine uses one of the store's own: plain tuple
    rows whatever row factory the application set, and the transaction it is in."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn
        self._cursor = _cursor(conn)

    def execute(self, statement: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self._cursor.execute(statement, params)

    def executemany(self, statement: str, rows: Iterable[Sequence[Any]]) -> sqlite3.Cursor:
        return self._cursor.executemany(statement, rows)

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction


def notify(c: SqliteConnection, queues: Iterable[str]) -> None:
    """Nothing: SQLite's watch sees the commit."""


def _failed(conn: sqlite3.Connection, e: sqlite3.Error) -> NoReturn:
    if isinstance(e, sqlite3.ProgrammingError):
        raise UnusableConnection(f"the connection given with conn= cannot be used ({e})") from None
    raise translate(e, _path(conn)) from e


def _cursor(conn: sqlite3.Connection) -> sqlite3.Cursor:
    """A cursor that returns plain tuples, whatever row factory the application set."""
    c = conn.cursor()
    c.row_factory = None
    return c


def _path(conn: sqlite3.Connection) -> str:
    try:
        return next((os.fsdecode(r[2]) for r in _cursor(conn).execute("PRAGMA database_list")
                     if r[1] == "main"), "the connection given with conn=")
    except sqlite3.Error:
        return "the connection given with conn="


_WRITES = AppWrites(DIALECT, AppCursor, sqlite3.Error, _failed, notify, DIALECT.insert_each)
insert_many, complete, on_app = _WRITES.insert_many, _WRITES.complete, _WRITES.on_app
