"""Opening an SQLite database for jobq, and what every call on its connection shares.

* ``connect`` creates a missing file owner-only (0600) before SQLite touches it, and
  opens read-only connections through a ``mode=ro`` URI.
* ``set_pragmas``: WAL, the durability mode, jobq's page size and checkpoint interval.
* ``write_transaction``: every multi-statement write.
* ``translate``: sqlite3 errors to jobq's (``SqliteBackend.run`` applies it).
* ``warn_if_network``: WAL does not work on a network filesystem.
"""
from __future__ import annotations

import os
import sqlite3
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar
from urllib.parse import quote

from ...common.file_locks import describe_process, lock_holders, stopped
from ...common.filesystem import create_private, network_filesystem
from ...errors import (
    DatabaseError, DatabaseUnavailable, JobqError, NetworkFilesystemWarning, NotADatabase,
    StorageFull,
)
from ..dbapi import Cursor
from .schema import PAGE_SIZE

def text(raw: bytes) -> str:
    """Text columns that are not valid UTF-8 (written by something other than jobq) are
    read with U+FFFD in place of the bad bytes, instead of failing the whole query."""
    return str(raw, "utf-8", "replace")


SYNCHRONOUS_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
MEMORY = ":memory:"  # an in-memory database: one connection's, gone when it closes
WAL_CHECKPOINT_BYTES = 4 * 1024 * 1024  # WAL written between automatic checkpoints


_WRITE_FAILED = frozenset(getattr(sqlite3, name, -1) for name in (
    "SQLITE_IOERR_WRITE", "SQLITE_IOERR_TRUNCATE",
    "SQLITE_IOERR_SHMSIZE"))


def translate(e: sqlite3.Error, path: str) -> JobqError:
    extended = getattr(e, "sqlite_errorcode", None) or 0
    code = error_code(e)
    if code == sqlite3.SQLITE_FULL:
        return StorageFull(f"{path}: the disk or file size limit is full ({e})")
    if extended in _WRITE_FAILED:  # EFBIG and most ENOSPC paths surface as these
        return StorageFull(f"{path}: writing failed: the disk is full or the file size limit "
                           f"was reached ({e})")
    if code in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
        return NotADatabase(f"{path} is not an SQLite database, or it is corrupt ({e})")
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        holders = "; ".join(describe_process(pid) for pid in write_lock_holders(path))
        return DatabaseUnavailable(f"{path}: the database stayed locked past the busy timeout"
                                   f"{f' (held by {holders})' if holders else ''} ({e})")
    if code == sqlite3.SQLITE_CANTOPEN:
        return DatabaseUnavailable(f"{path}: cannot open the database file (is it or its "
                                   f"directory read-only, or did it vanish?) ({e})")
    if code == sqlite3.SQLITE_READONLY:
        return DatabaseUnavailable(f"{path}: the database is read-only here ({e})")
    return DatabaseUnavailable(f"{path}: {e}")




# SQLite's WAL write lock: byte 120 of the -shm file (WAL_WRITE_LOCK, see wal.c).
_WAL_WRITE_LOCK = 120


def write_lock_holders(path: str, locks: str = "/proc/locks") -> list[int]:
    """The pids holding the write lock of the WAL database ``path`` (``file_locks``)."""
    return lock_holders(f"{path}-shm", _WAL_WRITE_LOCK, locks)


def stopped_lock_holders(path: str) -> list[str]:
    """Descriptions of the processes holding the write lock while stopped (SIGSTOP, a
    debugger): every write waits for them, however long."""
    return stopped(write_lock_holders(path))


class SqliteCursor(Cursor, Protocol):
    @property
    def lastrowid(self) -> int | None: ...


class SqliteConnection(Protocol):
    """What the SQLite dialect uses of a connection: the store's own ``sqlite3.Connection``
    or an application's, through ``app_connection.AppCursor``."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> SqliteCursor: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> object: ...

    @property
    def in_transaction(self) -> bool: ...


SC = TypeVar("SC", bound=SqliteConnection)


@contextmanager
def write_transaction(c: SC) -> Iterator[SC]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any error. IMMEDIATE takes the
    write lock up front: a deferred transaction that reads first and writes later can fail
    with SQLITE_BUSY at once, whatever the busy timeout. Inside an open transaction (one
    this store began: it holds the write lock already), joins it."""
    if c.in_transaction:
        yield c
        return
    c.execute("BEGIN IMMEDIATE")
    try:
        yield c
        c.execute("COMMIT")
    except BaseException:
        if c.in_transaction:  # SQLite may already have rolled back (e.g. disk full)
            c.execute("ROLLBACK")
        raise


def warn_if_network(path: str) -> None:
    kind = network_filesystem(path)
    if kind is not None:
        warnings.warn(
            f"{path} is on a network filesystem ({kind}): SQLite's WAL mode does not work "
            "there, and jobs may be lost or run twice; keep the database on a local disk",
            NetworkFilesystemWarning, stacklevel=4)


def error_code(e: sqlite3.Error) -> int:
    return (getattr(e, "sqlite_errorcode", None) or 0) & 0xFF


def connect(path: str, busy_timeout: float, read_only: bool, create: bool,
             immutable: bool = False) -> sqlite3.Connection:
    if path == MEMORY:
        conn = sqlite3.connect(MEMORY, isolation_level=None, check_same_thread=False,
                               cached_statements=256)
        conn.text_factory = text
        return conn
    if os.path.isdir(path):
        raise DatabaseError(f"{path} is a directory, not a database file")
    if not os.path.exists(path):
        if not create:
            raise DatabaseError(f"{path}: no such database file")
        try:  # owner-only from the first byte; SQLite gives -wal and -shm the same mode.
            create_private(path)
        except OSError as e:
            raise DatabaseError(f"{path}: cannot create the database file ({e.strerror})") from None
    target = f"file:{uri_path(path)}?mode=ro" if read_only else path
    if immutable:
        target += "&immutable=1"
    try:
        conn = sqlite3.connect(
            target, timeout=busy_timeout, isolation_level=None, check_same_thread=False,
            uri=read_only, cached_statements=256,
        )
        conn.text_factory = text
        return conn
    except sqlite3.Error as e:
        raise DatabaseUnavailable(f"{path}: cannot open the database ({e})") from None


def uri_path(path: str) -> str:
    return quote(os.path.abspath(path))



def set_pragmas(c: sqlite3.Connection, path: str, synchronous: str) -> None:
    if path == MEMORY:  # no file, no other connection: WAL and syncs mean nothing here
        return
    if c.execute("PRAGMA page_count").fetchone()[0] == 0:  # empty file: its layout is ours
        c.execute(f"PRAGMA page_size={PAGE_SIZE:d}")
    mode = c.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise DatabaseError(f"{path}: cannot switch the database to WAL mode (it stays in {mode!r})")
    c.execute(f"PRAGMA synchronous={synchronous}")  # validated against SYNCHRONOUS_MODES
    # SQLite checkpoints after 1000 pages of WAL: 4 MiB at its default page size, but only
    # 1 MiB at jobq's. A checkpoint syncs the WAL and the database file even under NORMAL,
    # so keep the 4 MiB SQLite meant (a drain runs ~6 % faster than at 1 MiB).
    page_size = c.execute("PRAGMA page_size").fetchone()[0]
    c.execute(f"PRAGMA wal_autocheckpoint={max(1000, WAL_CHECKPOINT_BYTES // page_size):d}")

