"""The SQLite store's change signal: wake a waiter when another connection commits.

On Linux, inotify reports every write() to the database's files (a commit appends to the
``-wal`` file), so an idle worker can sleep in ``select`` and wake within a millisecond of
a commit in any process, at no CPU cost while nothing happens. The write that wakes it may
belong to a commit that is not visible yet (SQLite writes the WAL, then publishes the
commit in shared memory, which inotify does not see), so after a wake-up the watch keeps
checking ``PRAGMA data_version`` for a moment (``SETTLE``). Writes that bring nothing new
(the store's own heartbeats, a checkpoint) wake it, but ``data_version`` stays put and the
wait goes on. Elsewhere (or when inotify is unavailable, e.g. out of watches) the watch
polls ``data_version``.

The directory is watched only during a wait: each write() to a watched file costs its
writer (any process) a notification, and a busy worker's commits are several writes a job.
A wait that arms the watch polls for ``SETTLE`` first, for a commit whose writes came
before.

A file deleted or replaced under an open connection goes on being read as it was: the
watch raises ``DatabaseUnavailable`` (``SqliteStore.check`` compares the inode opened).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import sqlite3
import struct
import sys
import threading
import time
from typing import Protocol

from ..watching import WakePipe, drain


_IN_MODIFY = 0x00000002
_IN_CLOSE_WRITE = 0x00000008
_IN_MOVED_TO = 0x00000080
_IN_CREATE = 0x00000100
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_MASK = _IN_MODIFY | _IN_CLOSE_WRITE | _IN_MOVED_TO | _IN_CREATE
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        return libc
    except (OSError, AttributeError):
        return None


class FileWatch:
    """Blocks until one of a database's files is written, ``wake()`` is called, or a
    timeout passes."""

    def __init__(self, fd: int, prefix: bytes, libc: ctypes.CDLL, directory: bytes):
        self._fd = fd
        self._prefix = prefix
        self._libc = libc
        self._directory = directory
        self._wd: int | None = None  # the watch descriptor while armed
        self._pipe = WakePipe()

    @classmethod
    def open(cls, db_path: str) -> FileWatch | None:
        libc = _libc()
        if libc is None:
            return None
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return None
        watch = cls(fd, os.fsencode(os.path.basename(db_path)), libc,
                    os.fsencode(os.path.dirname(os.path.abspath(db_path)) or "."))
        if not watch.arm():  # e.g. out of watches: the caller polls instead
            watch.close()
            return None
        watch.disarm()
        return watch

    def arm(self) -> bool:
        """Watch the directory (from now on its writes are reported); False if inotify
        refuses. Armed only while someone waits: every write() to a watched file costs
        the writer a notification, and a busy worker's own commits are many writes."""
        if self._wd is None:
            wd = self._libc.inotify_add_watch(self._fd, self._directory, _MASK)
            if wd < 0:
                return False
            self._wd = wd
        return True

    def disarm(self) -> None:
        if self._wd is not None:
            self._libc.inotify_rm_watch(self._fd, self._wd)
            self._wd = None
            drain(self._fd)  # the events queued so far, and the removal's own

    def wait(self, timeout: float) -> bool:
        """True when a database file was written (or ``wake()`` called) within ``timeout``."""
        try:
            ready, _, _ = select.select([self._fd, self._pipe.fd], [], [], max(0.0, timeout))
        except (OSError, ValueError):  # closed under us: behave as a timeout
            return False
        woke = False
        if self._pipe.fd in ready:
            self._pipe.drain()
            woke = True
        if self._fd in ready:
            woke = self._ours(drain(self._fd)) or woke
        return woke

    def wake(self) -> None:
        """Make a ``wait`` in another thread return now. Safe from a signal handler."""
        self._pipe.wake()

    def _ours(self, data: bytes) -> bool:
        """Whether the events name one of the database's files (db, -wal, -shm, -journal)."""
        offset = 0
        while offset + _EVENT.size <= len(data):
            _wd, _mask, _cookie, length = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size: offset + _EVENT.size + length].rstrip(b"\0")
            if name.startswith(self._prefix):
                return True
            offset += _EVENT.size + length
        return False

    def close(self) -> None:
        self._pipe.close()
        try:
            os.close(self._fd)
        except OSError:
            pass


SETTLE = 0.05  # after a database write wakes the watch, look this long for its commit
_SETTLE_POLL = 0.002  # ... this often


class WatchedFile(Protocol):
    """What a watch reads of its ``SqliteBackend``."""

    @property
    def path(self) -> str: ...

    @property
    def in_memory(self) -> bool: ...

    @property
    def frozen(self) -> bool: ...

    def data_version(self) -> int: ...

    def check(self) -> None: ...


class SqliteWatch:
    """``base.Watch`` for ``SqliteStore``: inotify where available, else polling."""

    def __init__(self, store: WatchedFile, poll_interval: float):
        self._store = store
        self._poll = poll_interval
        self._seen = store.data_version()
        self._woken = threading.Event()
        self._files = None if store.frozen or store.in_memory else FileWatch.open(store.path)

    def _changed(self) -> bool:
        if self._woken.is_set():
            self._woken.clear()
            return True
        version = self._store.data_version()
        if version != self._seen:
            self._seen = version
            return True
        return False

    def wait(self, timeout: float) -> bool:
        self._store.check()
        files = self._files
        if timeout > 0 and files is not None and not files.arm():
            files.close()  # inotify refused the watch (out of watches): poll from now on
            self._files = files = None
        try:
            return self._wait(timeout, armed=timeout > 0 and files is not None)
        finally:
            if files is not None:
                files.disarm()

    def _wait(self, timeout: float, armed: bool) -> bool:
        if self._changed():
            return True
        now = time.monotonic()
        deadline = now + max(0.0, timeout)
        # Poll at first: a commit whose writes came before the watch was armed may become
        # visible only now.
        settle = now + SETTLE if armed else 0.0
        while True:
            now = time.monotonic()
            left = deadline - now
            if left <= 0:
                return False
            if self._files is None:
                self._woken.wait(min(left, self._poll))
            elif self._files.wait(min(left, 1.0) if now >= settle else _SETTLE_POLL):
                settle = time.monotonic() + SETTLE
            elif time.monotonic() >= settle:
                continue  # a plain timeout, or writes to some other file
            if self._changed():
                return True

    def wake(self) -> None:
        self._woken.set()
        if self._files is not None:
            self._files.wake()

    def close(self) -> None:
        if self._files is not None:
            self._files.close()
            self._files = None

class OwnVersion:
    """A ``WatchedFile`` whose ``data_version`` is read on a connection of its own
    (``connection``, read-only): it then changes on every commit of every other connection,
    the store's included. On the store's connection, a commit through that very connection
    (the worker's completion, in the process where a wait runs) would never count."""

    def __init__(self, store: WatchedFile, connection: sqlite3.Connection):
        self._store = store
        self._conn = connection
        self._lock = threading.Lock()

    @property
    def path(self) -> str:
        return self._store.path

    @property
    def in_memory(self) -> bool:
        return self._store.in_memory

    @property
    def frozen(self) -> bool:
        return self._store.frozen

    def data_version(self) -> int:
        with self._lock:
            return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def check(self) -> None:
        self._store.check()

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class SqliteEndWatch(SqliteWatch):
    """``base.EndWatch`` for ``SqliteStore``: its change signal, read through ``OwnVersion``
    over ``connection`` (every commit counts, the store's own connection's too; None for
    an in-memory database, which has no other connection: the store's is read). A commit
    does not say which jobs it ended: ``ended()`` is always None (look at every one)."""

    def __init__(self, store: WatchedFile, poll_interval: float,
                 connection: sqlite3.Connection | None):
        self._own = None if connection is None else OwnVersion(store, connection)
        super().__init__(store if self._own is None else self._own, poll_interval)

    def ended(self) -> frozenset[int] | None:
        return None

    def close(self) -> None:
        super().close()
        if self._own is not None:
            self._own.close()


def file_identity(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino
