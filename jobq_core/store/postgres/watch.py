"""The PostgreSQL store's change signal: LISTEN/NOTIFY for new work, a snapshot poll for
everything else.

Sending: see ``notify.py`` (one ``pg_notify`` per queue per window, after the commit).

Waiting. ``PgWatch`` holds one LISTEN connection of its own, outside the pool, and sleeps
in ``select`` on its socket and a wake pipe. Every ``poll_interval`` (with jitter) it also
reads ``pg_current_snapshot()``: its text changes whenever any transaction on the server
started writing or ended, so a change seen there may be spurious but a commit is never
missed. That poll is a plain read: it writes nothing and takes no lock, so the monitor can
run it every second. After the LISTEN connection breaks it reconnects with backoff (one
log line per outage) and reports a change, as notifications sent meanwhile are lost.

Making a watch never fails for want of the server: the store has connected already, so a
LISTEN connection that cannot be opened then (a network blip as a worker starts) is an
outage like a break, retried with backoff from ``wait``, and a snapshot that cannot be read
yet makes the first poll that can report a change.

Poll-only mode (``poll_only=True``, for PgBouncer in transaction mode, where LISTEN does
not work): no LISTEN connection and no NOTIFY; the snapshot poll alone.

The same watch on ``ENDED_CHANNEL`` is ``Store.watch_ends``'s (``Queue.wait``): while it
lives it keeps jobq_meta's ``WAITERS_KEY`` ``MARK_FOR`` seconds ahead (written when it is
made, before any wait can read its job, and again every ``MARK_EVERY`` seconds), and
meanwhile every statement that ends jobs sends one notification naming them
(``dialect.announce``), which ``ended()`` hands on; a poll or a reconnection names none
(look at every awaited job).
"""
from __future__ import annotations

import logging
import time

import psycopg

from ...errors import DatabaseUnavailable, JobqError
from ..dbapi import one
from ..pool import Backoff, Outage, one_line
from ..watching import PolledWatch
from .connection import PgPool
from .dialect import ENDED_CHANNEL, NOTIFY_CHANNEL, WAITING

log = logging.getLogger("jobq.store")

SNAPSHOT = "SELECT pg_current_snapshot()::text"
MARK_FOR = 30  # seconds ahead a watch of ended jobs keeps WAITERS_KEY
MARK_EVERY = 10.0  # seconds between its writes of it


def read_snapshot(c: psycopg.Connection) -> str:
    text: str = one(c.execute(SNAPSHOT))[0]  # cast to text, which psycopg returns as str
    return text


class PgWatch(PolledWatch):
    """``base.Watch`` for ``PostgresStore``: the snapshot poll, plus LISTEN."""

    def __init__(self, conns: PgPool, *, listen: bool, poll_interval: float,
                 channel: str = NOTIFY_CHANNEL):
        self._conns = conns
        self._channel = channel
        self._ended: set[int] | None = set()  # ids named on ENDED_CHANNEL since ended()
        self._marked = -1e9  # monotonic time WAITERS_KEY was last written
        self._listen_wanted = listen
        self._conn: psycopg.Connection | None = None
        self._retry_at = 0.0
        self._backoff = Backoff()
        self._outage = Outage(conns.display)  # the LISTEN connection's, one line each way
        super().__init__(lambda: conns.try_once(read_snapshot), poll_interval)
        if listen:
            self._relisten()
            if channel == ENDED_CHANNEL:
                self._mark()

    def _mark(self) -> None:
        """Tell completions that someone waits for the next ``MARK_FOR`` seconds (see
        ``dialect.WAITING``); a store that cannot write (read-only) finds ends by its poll."""
        self._marked = time.monotonic()
        try:
            self._conns.run(lambda c, _again: c.execute(WAITING, (MARK_FOR,)))
        except JobqError as e:
            log.debug("%s: cannot mark that a wait listens (%s): it polls", self._conns.display, e)

    # -- the LISTEN connection ----------------------------------------------------------

    def _listen(self) -> psycopg.Connection:
        conn = self._conns.new()
        try:
            conn.execute(f"LISTEN {self._channel}")
        except psycopg.Error as e:
            conn.close()
            raise DatabaseUnavailable(f"{self._conns.display}: LISTEN failed ({one_line(e)})") from None
        return conn

    def _relisten(self) -> bool:
        """Try to reconnect the LISTEN connection (with backoff); True when it is back."""
        now = time.monotonic()
        if now < self._retry_at:
            return False
        try:
            self._conn = self._listen()
        except JobqError as e:
            self._outage.start(e, "cannot open the LISTEN connection")
            self._retry_at = now + self._backoff.next()
            return False
        self._ended = None  # what was sent meanwhile is lost: look at everything
        self._outage.end("listening again")
        self._backoff = Backoff()
        return True

    def _drop_connection(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except psycopg.Error:
                pass
            self._conn = None

    def _lost(self, e: BaseException) -> None:
        self._drop_connection()
        self._outage.start(e, "the LISTEN connection broke")

    def _notified(self) -> bool:
        """Read what arrived on the LISTEN connection; True if it held a notification."""
        conn = self._conn
        if conn is None:
            return False
        try:
            pg = conn.pgconn
            pg.consume_input()
            got = False
            while (note := pg.notifies()) is not None:
                got = True
                if self._channel == ENDED_CHANNEL:
                    self._heard(note.extra)
            if conn.closed or pg.status != psycopg.pq.ConnStatus.OK:
                raise psycopg.OperationalError("the server closed the connection")
            return got
        except psycopg.Error as e:
            self._lost(e)
            self._ended = None
            return True  # notifications may have been lost with it: look once

    def _heard(self, payload: bytes) -> None:
        """Note the job ids an ended-jobs notification names (none: look at every job)."""
        if self._ended is None:
            return
        try:
            self._ended.update(int(i) for i in payload.split(b","))
        except ValueError:  # an empty payload: a statement that ended too many to name
            self._ended = None

    def ended(self) -> frozenset[int] | None:
        """The ids the notifications since the last call named; None when a poll or a
        reconnection may have missed some (``base.EndWatch``)."""
        ended, self._ended = self._ended, set()
        return None if ended is None else frozenset(ended)

    def _moved(self) -> None:
        self._ended = None  # a change no notification named

    # -- Watch ---------------------------------------------------------------------------

    def wait(self, timeout: float) -> bool:
        start = time.monotonic()
        if self._channel == ENDED_CHANNEL and self._listen_wanted and \
                start + max(0.0, timeout) - self._marked > MARK_EVERY:
            self._mark()
        return super().wait(timeout - (time.monotonic() - start))

    def _pushed(self) -> bool:
        if self._listen_wanted and self._conn is None and self._relisten():
            return True  # notifications sent while it was down are lost: look once
        return self._notified()

    def _fds(self) -> list[int]:
        return [self._conn.fileno()] if self._conn is not None else []

    def _sleep(self, now: float, sleep: float) -> float:
        if self._listen_wanted and self._conn is None:
            return min(sleep, max(0.0, self._retry_at - now))
        return sleep

    def close(self) -> None:
        self._drop_connection()
        super().close()
