"""A database server's clock, for a store whose workers run on many hosts."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from .pool import Pool

C = TypeVar("C")


class ServerClock(Generic[C]):
    """The database server's clock, read without a round trip: the server's time at the
    last sync plus the monotonic time since. Every host's workers judge leases by this one
    clock, whatever their own clocks say, and a local clock step changes nothing. Synced
    when the store opens (``sync``, on its first use: ``open_`` opens it when the clock is
    read first) and again every ``RESYNC`` seconds (one query, ``read``: the server's Unix
    time on a connection; on failure the estimate goes on)."""

    RESYNC = 60.0

    def __init__(self, conns: Pool[C, Any], read: Callable[[C], float],
                 open_: Callable[[], None]):
        self._conns = conns
        self._read_server = read
        self._open = open_
        self._lock = threading.Lock()
        self._synced = False
        self._base = self._at = self._last = 0.0
        self._next_sync = 0.0

    def sync(self, conn: C) -> None:
        base, at = self._read(conn)
        with self._lock:
            self._base, self._at = base, at
            self._last = max(self._last, base)
            self._next_sync = at + self.RESYNC
            self._synced = True

    def _read(self, conn: C) -> tuple[float, float]:
        before = time.monotonic()
        server = self._read_server(conn)
        after = time.monotonic()
        return server, (before + after) / 2

    def now(self) -> float:
        if not self._synced:
            self._open()  # the store's first use: it syncs this clock as it opens
        mono = time.monotonic()
        if mono >= self._next_sync:
            self._resync(mono)
        with self._lock:
            # Never backwards: a resync may move the estimate back by a few ms.
            t = self._base + (mono - self._at)
            if t < self._last:
                t = self._last
            self._last = t
            return t

    def _resync(self, mono: float) -> None:
        with self._lock:
            if mono < self._next_sync:
                return  # another thread did it
            self._next_sync = mono + self.RESYNC
        read = self._conns.try_once(self._read)
        if read is not None:
            with self._lock:
                self._base, self._at = read
