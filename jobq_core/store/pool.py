"""A store's connections to a database server, and what every call on them shares.

* ``Pool`` holds at most ``size`` connections shared by the threads of one process,
  opened when first needed. ``run`` is the one way to use them: it retries an operation
  on a fresh connection when the old one broke (a server restart, the session killed, a
  network blip), with backoff, for up to ``reconnect_for`` seconds, and logs one line
  when an outage starts and one when it ends (``Outage`` and ``Backoff``, which a push
  signal's own connection shares: ``postgres/watch.py``).
* Fork safety: a child process never touches its parent's connections (their sockets are
  shared; a close would end the parent's session): it opens its own.
* What differs between drivers is a ``Driver``: how to connect, whether a connection
  broke, how to roll back what a connection left open, its exception class and how its
  errors read in jobq's words.

Why not the driver's own pool (psycopg_pool): its reconnect backoff doubles without a cap
below its five-minute reconnect timeout (a 10 s outage can leave a worker waiting 16 s
more), each pool runs a scheduler and worker threads, and a pool's connections cross a
fork. Two connections and a condition variable need none of that.
"""
from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from ..errors import DatabaseUnavailable, DatabaseUnreachable, JobqError

log = logging.getLogger("jobq.store")
T = TypeVar("T")
C = TypeVar("C")
E = TypeVar("E", bound=Exception)

_ABANDONED: list[object] = []  # connections a forked child inherited: kept, never closed, never used


def one_line(e: BaseException) -> str:
    """A driver message on one line (libpq's connection errors span several)."""
    text = str(e).strip() or type(e).__name__
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


class Outage:
    """One log line when an outage of ``display``'s connections starts (``start``) and
    one when it ends (``end``), however many threads and retries meet it."""

    def __init__(self, display: str):
        self.display = display
        self.since: float | None = None
        self._lock = threading.Lock()

    def start(self, e: BaseException, what: str = "lost the connection") -> None:
        with self._lock:
            if self.since is None:
                self.since = time.monotonic()
                log.warning("%s: %s (%s); reconnecting", self.display, what, one_line(e))

    def end(self, what: str = "reconnected") -> None:
        with self._lock:
            if self.since is not None:
                log.warning("%s: %s after %.1fs", self.display, what,
                            time.monotonic() - self.since)
                self.since = None


class Backoff:
    """The delays between reconnection tries: 50 ms, doubling up to 2 s, each jittered."""

    def __init__(self) -> None:
        self.delay = 0.05

    def next(self) -> float:
        delay = self.delay
        self.delay = min(2.0, delay * 2) * random.uniform(0.8, 1.2)
        return delay


def reach(check: Callable[[], None], wait: float) -> None:
    """``check()`` (a store's first connection), tried again with ``Backoff`` for up to
    ``wait`` seconds while it raises ``DatabaseUnreachable`` (a server down, starting up or
    full), as a connection lost later is; one line logged when it first fails, one when it
    answers. Any other error, or the last one after ``wait``, is raised."""
    deadline = time.monotonic() + wait
    backoff = Backoff()
    since: float | None = None
    while True:
        try:
            check()
        except DatabaseUnreachable as e:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            if since is None:
                since = time.monotonic()
                log.warning("%s; trying again for up to %gs", e, wait)
            time.sleep(min(backoff.next(), left))
            continue
        if since is not None:
            log.warning("the database answered after %.1fs", time.monotonic() - since)
        return


class Driver(Protocol[C, E]):
    """What a ``Pool`` needs of a database driver (``C`` its connection, ``E`` its base
    exception)."""

    error: type[E]

    def connect(self) -> C:
        """One connection, set up for jobq; ``DatabaseUnavailable`` in one line if not."""
        ...

    def broken(self, conn: C) -> bool: ...

    def reset(self, conn: C) -> None:
        """Roll back a transaction ``conn`` left open (raises ``E`` when it cannot)."""
        ...

    def close(self, conn: C) -> None: ...

    def translate(self, e: E) -> JobqError: ...

    def surely_rolled_back(self, e: E) -> bool:
        """The server ended the session, so the statement that got ``e`` did not commit.
        Any other break leaves it unknown whether a commit under way went through."""
        ...


class PoolBusy(DatabaseUnavailable):
    """Every connection stayed in use by other threads until the deadline."""


class Pool(Generic[C, E]):
    """At most ``size`` connections, shared by the threads of one process; ``display``
    names the database in messages."""

    def __init__(self, driver: Driver[C, E], display: str, *, size: int,
                 reconnect_for: float):
        self.driver: Driver[C, E] = driver
        self.display = display
        self.size = size
        self.reconnect_for = reconnect_for
        self._pid = os.getpid()
        self._cond = threading.Condition()
        self._idle: list[C] = []
        self._open = 0  # connections in use or idle
        self._closed = False
        self._outage = Outage(display)

    def new(self) -> C:
        return self.driver.connect()

    def open_first(self, setup: Callable[[C], None]) -> None:
        """A first connection, given to ``setup`` (a store's checks as it opens), then
        pooled; a driver error in ``setup`` is one ``DatabaseUnavailable`` line, and the
        connection is closed on any failure."""
        first = self.new()
        try:
            setup(first)
        except self.driver.error as e:
            self._close(first)
            raise DatabaseUnavailable(f"{self.display}: {e}") from None
        except BaseException:
            self._close(first)
            raise
        self.adopt(first)

    def adopt(self, conn: C) -> None:
        """Put a connection opened with ``new`` into the pool (the one the store opened
        first, to check the URL and the schema)."""
        with self._cond:
            self._open += 1
            self._idle.append(conn)

    # -- taking and giving back ---------------------------------------------------------

    def _forked(self) -> None:
        """In a forked child: forget the parent's connections without closing them."""
        with self._cond:
            if self._pid == os.getpid():
                return
            _ABANDONED.extend(self._idle)
            self._idle = []
            self._open = 0
            self._pid = os.getpid()
            self._cond = threading.Condition()

    def _take(self, deadline: float) -> C:
        if self._pid != os.getpid():
            self._forked()
        with self._cond:
            while True:
                if self._closed:
                    raise DatabaseUnavailable(f"{self.display}: the store is closed")
                if self._idle:
                    return self._idle.pop()
                if self._open < self.size:
                    self._open += 1
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PoolBusy(f"{self.display}: all {self.size} connections stayed busy")
                self._cond.wait(left)
        try:
            return self.new()
        except BaseException:
            with self._cond:
                self._open -= 1
                self._cond.notify()
            raise

    def _give(self, conn: C) -> None:
        if self._pid != os.getpid():
            _ABANDONED.append(conn)  # taken before a fork in another thread: not ours
            return
        keep = not self.driver.broken(conn) and not self._closed
        if keep:
            try:
                self.driver.reset(conn)
            except self.driver.error:
                keep = False
        if not keep:
            self._close(conn)
        with self._cond:
            if keep:
                self._idle.append(conn)
            else:
                self._open -= 1
            self._cond.notify()

    def _close(self, conn: C) -> None:
        try:
            self.driver.close(conn)
        except self.driver.error:
            pass

    # -- running an operation -----------------------------------------------------------

    def run(self, op: Callable[[C, bool], T]) -> T:
        """``op(conn, again)`` on a pooled connection. When the connection breaks, ``op``
        runs again on another, for up to ``reconnect_for`` seconds; ``again`` is True when
        an earlier try may have committed (``op`` then checks what it finds instead of
        assuming a clean slate). Database errors become jobq's."""
        start = time.monotonic()
        deadline = start + self.reconnect_for
        again = False
        backoff = Backoff()
        while True:
            try:
                conn = self._take(deadline)
            except PoolBusy:
                raise
            except DatabaseUnavailable as e:
                if self._closed or time.monotonic() >= deadline:
                    raise
                self._outage.start(e)
                time.sleep(min(backoff.next(), max(0.0, deadline - time.monotonic())))
                continue
            try:
                result = op(conn, again)
            except self.driver.error as e:
                broken = self.driver.broken(conn)
                self._give(conn)
                if not broken:
                    raise self.driver.translate(e) from e
                again = again or not self.driver.surely_rolled_back(e)
                self._outage.start(e)
                if time.monotonic() >= deadline:
                    raise DatabaseUnavailable(f"{self.display}: the connection was lost and "
                                              f"did not come back ({one_line(e)})") from None
                continue
            except BaseException:
                self._give(conn)
                raise
            self._give(conn)
            if self._outage.since is not None:
                self._outage.end()
            return result

    def try_once(self, op: Callable[[C], T]) -> T | None:
        """``op`` on a connection if one can be had at once; None on any failure."""
        try:
            conn = self._take(time.monotonic() + 0.1)
        except JobqError:
            return None
        try:
            return op(conn)
        except self.driver.error:
            return None
        finally:
            self._give(conn)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            forked = self._pid != os.getpid()
            self._cond.notify_all()
        if forked:
            _ABANDONED.extend(idle)
            return
        for conn in idle:
            self._close(conn)
