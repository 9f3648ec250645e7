"""What the dashboard reads and does, with no HTTP here: the queue it watches, one read
per page or API call (``jobq_core.presentation.views``: the monitor's view model), the
actions, and the change signal the live pages wait on.

Hazards and invariants:

* Given a database (a path or URL), the dashboard reads through a read-only ``Queue``
  (SQLite ``mode=ro``; a PostgreSQL session with ``default_transaction_read_only``) and
  acts through a short-lived writer, one per action, as the monitor does. Given a
  ``Queue`` (mounted in an application), it uses that queue for both.
* A database that cannot be read raises ``Unreachable`` with a one-line reason; the next
  call opens it again, so the pages recover when it comes back.
* ``Changes`` runs one thread on ``Queue.watch()`` while someone listens, and counts the
  changes it reports: the live pages ask for new rows only when the count moves (and
  once a second on pages whose cells move with the clock). At idle the watch waits; a
  page costs nothing.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from jobq_core import JobqError, Queue, Watch
from jobq_core.presentation.display import masked_url

READ_BUSY_TIMEOUT = 1.0  # a page never waits long on a lock: it says so and tries again
WRITE_BUSY_TIMEOUT = 5.0
T = TypeVar("T")


class Unreachable(Exception):
    """The database could not be read this time (down, locked, gone); the message says
    why, in one line, with any password masked."""


class Forbidden(Exception):
    """An action was asked of a read-only dashboard."""


class Database:
    """The queue the dashboard shows: opened on first use, reopened after a failure."""

    def __init__(self, db_or_queue: str | os.PathLike[str] | Queue):
        if isinstance(db_or_queue, Queue):
            self._given: Queue | None = db_or_queue
            self.name = "queue"
            self._url: str | None = None
        else:
            self._given = None
            self._url = os.fspath(db_or_queue)
            self.name = masked_url(self._url)
        self._queue: Queue | None = self._given
        self._lock = threading.Lock()

    def reading(self, read: Callable[[Queue], T]) -> T:
        """``read(queue)``; a jobq error becomes ``Unreachable`` and closes an owned queue
        (the next read opens it again)."""
        try:
            q = self._reader()
            if self._given is None:
                q.check()  # a file deleted or replaced since it was opened: open it again
            return read(q)
        except JobqError as e:
            self._drop()
            raise Unreachable(self.plain(e)) from None

    def acting(self, act: Callable[[Queue], T]) -> T:
        """``act(queue)`` on a writer: the given queue, or a short-lived one. Errors other
        than an unreachable database (a job in the wrong state) go to the caller."""
        if self._given is not None:
            return act(self._given)
        assert self._url is not None
        try:
            q = Queue(self._url, create=False, busy_timeout=WRITE_BUSY_TIMEOUT)
        except (JobqError, OSError) as e:
            raise Unreachable(self.plain(e)) from None
        with q:
            return act(q)

    def watch(self) -> Watch:
        return self.reading(lambda q: q.watch())

    def close(self) -> None:
        if self._given is None:
            self._drop()

    def plain(self, e: BaseException) -> str:
        text = (str(e) or type(e).__name__).splitlines()[0] if str(e) else type(e).__name__
        if self._url is not None and self._url in text:
            text = text.replace(self._url, self.name)
        return text

    def _reader(self) -> Queue:
        with self._lock:
            if self._queue is None:
                assert self._url is not None
                try:
                    self._queue = Queue(self._url, read_only=True, create=False,
                                        busy_timeout=READ_BUSY_TIMEOUT)
                except (JobqError, OSError) as e:
                    raise Unreachable(self.plain(e)) from None
            return self._queue

    def _drop(self) -> None:
        with self._lock:
            q, self._queue = self._queue, self._given
        if q is not None and q is not self._given:
            try:
                q.close()
            except Exception:  # noqa: BLE001 - closing a broken connection
                pass


class Changes:
    """A count of the changes ``Queue.watch()`` reported, kept by one thread that runs
    while someone listened in the last ``linger`` seconds. ``error``: why the database
    cannot be watched now (None when it can)."""

    def __init__(self, db: Database, *, linger: float = 30.0):
        self._db = db
        self._linger = linger
        self.version = 0
        self.error: str | None = None
        self._wanted = 0.0
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def listen(self) -> int:
        """The count now; starts the watching thread if it is not running."""
        with self._lock:
            self._wanted = time.monotonic()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="jobq-web-watch",
                                                daemon=True)
                self._thread.start()
        return self.version

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        watch: Watch | None = None
        try:
            while not self._stop.is_set() and time.monotonic() - self._wanted < self._linger:
                try:
                    if watch is None:
                        watch = self._db.watch()
                        self.error = None
                        self.version += 1  # anything may have changed while unwatched
                    if watch.wait(0.5):
                        self.version += 1
                except (Unreachable, JobqError, OSError) as e:
                    self.error = str(e) or type(e).__name__
                    if watch is not None:
                        watch.close()
                        watch = None
                    self._stop.wait(1.0)
        finally:
            if watch is not None:
                watch.close()
