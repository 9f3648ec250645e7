"""Connections to a PostgreSQL server for jobq, and what every call on them shares.

* ``parse_url`` splits jobq's own URL options (``poll_only``) from libpq's and makes the
  form shown in messages (never with the password).
* ``connect`` opens one connection; a server that cannot be reached, a wrong password
  or a missing database is one ``DatabaseUnavailable`` line.
* ``Connections`` is the store's pool: at most ``size`` connections shared by the threads
  of one process, opened when first needed. ``run`` is the one way to use them: it
  retries an operation on a fresh connection when the old one broke (a server restart,
  ``pg_terminate_backend``, a network blip), with backoff, for up to ``reconnect_for``
  seconds, and logs one line when an outage starts and one when it ends.
* Fork safety: a child process never touches its parent's connections (their sockets are
  shared; a close would end the parent's session): it opens its own.
* ``translate``: psycopg errors to jobq's.

Why not psycopg_pool: its reconnect backoff doubles without a cap below its five-minute
reconnect timeout (a 10 s outage can leave a worker waiting 16 s more), each pool runs a
scheduler and worker threads, and a pool's connections cross a fork. Two connections and
a condition variable need none of that.
"""
from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import unquote

import psycopg
from psycopg import errors as pgerrors
from psycopg.pq import ConnStatus, TransactionStatus

from ...errors import DatabaseError, DatabaseUnavailable, JobqError, StorageFull

log = logging.getLogger("jobq.store")
T = TypeVar("T")

JOBQ_URL_OPTIONS = {"poll_only"}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}

_ABANDONED: list[psycopg.Connection] = []  # connections a forked child inherited: kept, never closed, never used


def parse_url(url: str) -> tuple[str, str, dict[str, bool]]:
    """(conninfo for libpq, the URL without its password for messages, jobq's options).

    libpq gets the URL exactly as written, less jobq's own query options: re-encoding it
    would change what it means (``urlencode`` writes ``%20`` as ``+``, which libpq keeps
    as a plus), and libpq alone knows every form psql accepts (a Unix socket's directory
    in ``?host=`` or percent-encoded as the host, ``h1:5432,h2:5432``, ``[::1]``). This
    checks only the ports, so that a typo is one clear line before any connection."""
    scheme, _, rest = url.partition("://")
    rest, hash_, fragment = rest.partition("#")
    rest, ask, query = rest.partition("?")
    netloc, _, path = rest.partition("/")
    userinfo, at, hosts = netloc.rpartition("@")
    kept, ours, shown = [], {}, []
    for param in query.split("&") if query else []:
        key, _, value = (unquote(x) for x in param.partition("="))
        if key in JOBQ_URL_OPTIONS:
            if value.lower() not in _TRUE | _FALSE:
                raise ValueError(f"the URL option {key} takes true or false, got {value!r}")
            ours[key] = value.lower() in _TRUE
            continue
        kept.append(param)
        if key in ("host", "hostaddr", "port"):
            shown.append(param)
    for host in hosts.split(",") if hosts else []:
        _check_host(host, url)
    conninfo = f"{scheme}://{netloc}/{path}" + (f"?{'&'.join(kept)}" if kept else "")
    conninfo += f"{hash_}{fragment}"
    user = f"{userinfo.partition(':')[0]}@" if at and userinfo else ""
    where = hosts or ("" if shown else "localhost")
    display = f"postgresql://{user}{where}/{path}" + (f"?{'&'.join(shown)}" if shown else "")
    return conninfo, display, ours


def _check_host(host: str, url: str) -> None:
    """One ``host[:port]`` of a URL's host list: ``[v6]`` closed, the port a number."""
    if host.startswith("["):
        address, close, port = host[1:].partition("]")
        if not close or (port and not port.startswith(":")):
            raise ValueError(f"bad host {host!r} in the database URL {_redact(url)!r}")
        port = port[1:]
    else:
        port = host.rpartition(":")[2] if ":" in host else ""
    if port and not (port.isascii() and port.isdigit() and int(port) <= 65535):
        raise ValueError(f"bad port {port!r} in the database URL {_redact(url)!r}")


def _redact(url: str) -> str:
    scheme, _, rest = url.partition("://")
    netloc, slash, path = rest.partition("?")[0].partition("/")
    return f"{scheme}://{netloc.rpartition('@')[2]}{slash}{path}"


def one_line(e: BaseException) -> str:
    """A driver message on one line (libpq's connection errors span several)."""
    text = str(e).strip() or type(e).__name__
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def translate(e: psycopg.Error, display: str) -> JobqError:
    state = e.sqlstate or ""
    message = one_line(e)
    if isinstance(e, pgerrors.DiskFull) or state == "53100":
        return StorageFull(f"{display}: the server's disk is full ({message})")
    if isinstance(e, pgerrors.UndefinedTable):
        return DatabaseError(f"{display}: jobq's tables are missing ({message})")
    if isinstance(e, pgerrors.ReadOnlySqlTransaction):
        return DatabaseUnavailable(f"{display}: the database is read-only here ({message})")
    if isinstance(e, pgerrors.LockNotAvailable):
        return DatabaseUnavailable(f"{display}: a row stayed locked past the busy timeout ({message})")
    return DatabaseUnavailable(f"{display}: {message}")


def connect(conninfo: str, display: str, *, prepare: bool, setup: str,
            connect_timeout: float) -> psycopg.Connection:
    """One autocommit connection, set up for jobq; every failure is one line."""
    try:
        conn = psycopg.connect(conninfo, autocommit=True,
                               prepare_threshold=5 if prepare else None,
                               connect_timeout=max(2, round(connect_timeout)))
    except psycopg.Error as e:
        raise DatabaseUnavailable(f"{display}: cannot connect ({one_line(e)})") from None
    try:
        if setup:
            conn.execute(setup)
    except psycopg.Error as e:
        conn.close()
        raise DatabaseUnavailable(f"{display}: cannot set up the session ({one_line(e)})") from None
    return conn


class PoolBusy(DatabaseUnavailable):
    """Every connection stayed in use by other threads until the deadline."""


def _broken(conn: psycopg.Connection) -> bool:
    return conn.closed or conn.pgconn.status != ConnStatus.OK


def _surely_rolled_back(e: psycopg.Error) -> bool:
    """The server ended the session (admin shutdown, crash recovery, terminate): the
    statement that got this error did not commit. Any other break (the socket closed, no
    answer) leaves it unknown whether a commit that was under way went through."""
    return (e.sqlstate or "").startswith("57P")


class Connections:
    """At most ``size`` connections, shared by the threads of one process."""

    def __init__(self, conninfo: str, display: str, *, size: int, prepare: bool, setup: str,
                 connect_timeout: float, reconnect_for: float):
        self.conninfo = conninfo
        self.display = display
        self.size = size
        self.prepare = prepare
        self.setup = setup
        self.connect_timeout = connect_timeout
        self.reconnect_for = reconnect_for
        self._pid = os.getpid()
        self._cond = threading.Condition()
        self._idle: list[psycopg.Connection] = []
        self._open = 0  # connections in use or idle
        self._closed = False
        self._outage_since: float | None = None
        self._outage_lock = threading.Lock()

    def new(self) -> psycopg.Connection:
        return connect(self.conninfo, self.display, prepare=self.prepare, setup=self.setup,
                       connect_timeout=self.connect_timeout)

    def adopt(self, conn: psycopg.Connection) -> None:
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

    def _take(self, deadline: float) -> psycopg.Connection:
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

    def _give(self, conn: psycopg.Connection) -> None:
        if self._pid != os.getpid():
            _ABANDONED.append(conn)  # taken before a fork in another thread: not ours
            return
        keep = not _broken(conn) and not self._closed
        if keep and conn.pgconn.transaction_status != TransactionStatus.IDLE:
            try:
                conn.rollback()
            except psycopg.Error:
                keep = False
        if not keep:
            try:
                conn.close()
            except psycopg.Error:
                pass
        with self._cond:
            if keep:
                self._idle.append(conn)
            else:
                self._open -= 1
            self._cond.notify()

    # -- running an operation -----------------------------------------------------------

    def run(self, op: Callable[[psycopg.Connection, bool], T]) -> T:
        """``op(conn, again)`` on a pooled connection. When the connection breaks, ``op``
        runs again on another, for up to ``reconnect_for`` seconds; ``again`` is True when
        an earlier try may have committed (``op`` then checks what it finds instead of
        assuming a clean slate). Database errors become jobq's."""
        start = time.monotonic()
        deadline = start + self.reconnect_for
        again = False
        delay = 0.05
        while True:
            try:
                conn = self._take(deadline)
            except PoolBusy:
                raise
            except DatabaseUnavailable as e:
                if self._closed or time.monotonic() >= deadline:
                    raise
                self._outage(e)
                time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
                delay = min(2.0, delay * 2) * random.uniform(0.8, 1.2)
                continue
            try:
                result = op(conn, again)
            except psycopg.Error as e:
                broken = _broken(conn)
                self._give(conn)
                if not broken:
                    raise translate(e, self.display) from e
                again = again or not _surely_rolled_back(e)
                self._outage(e)
                if time.monotonic() >= deadline:
                    raise DatabaseUnavailable(f"{self.display}: the connection was lost and "
                                              f"did not come back ({one_line(e)})") from None
                continue
            except BaseException:
                self._give(conn)
                raise
            self._give(conn)
            if self._outage_since is not None:
                self._recovered()
            return result

    def try_once(self, op: Callable[[psycopg.Connection], T]) -> T | None:
        """``op`` on a connection if one can be had at once; None on any failure."""
        try:
            conn = self._take(time.monotonic() + 0.1)
        except JobqError:
            return None
        try:
            return op(conn)
        except psycopg.Error:
            return None
        finally:
            self._give(conn)

    def _outage(self, e: BaseException) -> None:
        with self._outage_lock:
            if self._outage_since is None:
                self._outage_since = time.monotonic()
                log.warning("%s: lost the connection (%s); reconnecting", self.display,
                            one_line(e))

    def _recovered(self) -> None:
        with self._outage_lock:
            if self._outage_since is not None:
                log.warning("%s: reconnected after %.1fs", self.display,
                            time.monotonic() - self._outage_since)
                self._outage_since = None

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
            try:
                conn.close()
            except psycopg.Error:
                pass


class ServerClock:
    """The database server's clock, read without a round trip: the server's time at the
    last sync plus the monotonic time since. Every host's workers judge leases by this one
    clock, whatever their own clocks say, and a local clock step changes nothing. Synced
    when the store opens (``sync``, on its first use: ``open_`` opens it when the clock is
    read first) and again every ``RESYNC`` seconds (one query; on failure the estimate goes
    on)."""

    RESYNC = 60.0

    def __init__(self, conns: Connections, open_: Callable[[], None]):
        self._conns = conns
        self._open = open_
        self._lock = threading.Lock()
        self._synced = False
        self._base = self._at = self._last = 0.0
        self._next_sync = 0.0

    def sync(self, conn: psycopg.Connection) -> None:
        base, at = self._read(conn)
        with self._lock:
            self._base, self._at = base, at
            self._last = max(self._last, base)
            self._next_sync = at + self.RESYNC
            self._synced = True

    @staticmethod
    def _read(conn: psycopg.Connection) -> tuple[float, float]:
        before = time.monotonic()
        row = conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8").fetchone()
        assert row is not None  # a SELECT with no FROM returns one row
        server = row[0]
        after = time.monotonic()
        return float(server), (before + after) / 2

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
