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

import sqlite3
import threading
import time
from typing import Protocol

from ...common.file_watch import FileWatch as FileWatch


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
