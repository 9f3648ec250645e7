"""Connections to a PostgreSQL server for jobq: what the store's pool (``store/pool.py``)
needs of psycopg, and jobq's URL.

* ``parse_url`` splits jobq's own URL options (``poll_only``, read by ``store/db_url.py``)
  from libpq's and makes the form shown in messages (never with the password).
* ``connect`` opens one connection; a server that cannot be reached, a wrong password
  or a missing database is one ``DatabaseUnavailable`` line.
* ``PgDriver``: psycopg to the pool (``translate``: psycopg errors to jobq's).
"""
from __future__ import annotations

from urllib.parse import unquote

import psycopg
from psycopg import errors as pgerrors
from psycopg.pq import ConnStatus, TransactionStatus

from ...errors import DatabaseError, DatabaseUnavailable, DatabaseUnreachable, JobqError, StorageFull
from ..db_url import check_hosts, jobq_options
from ..dbapi import one
from ..pool import Pool, one_line

JOBQ_URL_OPTIONS = {"poll_only"}


def parse_url(url: str) -> tuple[str, str, dict[str, bool]]:
    """(conninfo for libpq, the URL without its password for messages, jobq's options).

    libpq gets the URL exactly as written, less jobq's own query options: re-encoding it
    would change what it means (``urlencode`` writes ``%20`` as ``+``, which libpq keeps
    as a plus), and libpq alone knows every form psql accepts (a Unix socket's directory
    in ``?host=`` or percent-encoded as the host, ``h1:5432,h2:5432``, ``[::1]``). This
    checks only the ports (``db_url.check_hosts``), so that a typo is one clear line
    before any connection."""
    scheme, _, rest = url.partition("://")
    rest, hash_, fragment = rest.partition("#")
    rest, ask, query = rest.partition("?")
    netloc, _, path = rest.partition("/")
    userinfo, at, hosts = netloc.rpartition("@")
    kept, ours = jobq_options(query, JOBQ_URL_OPTIONS)
    shown = [p for p in kept if unquote(p.partition("=")[0]) in ("host", "hostaddr", "port")]
    check_hosts(hosts, url)
    conninfo = f"{scheme}://{netloc}/{path}" + (f"?{'&'.join(kept)}" if kept else "")
    conninfo += f"{hash_}{fragment}"
    user = f"{userinfo.partition(':')[0]}@" if at and userinfo else ""
    where = hosts or ("" if shown else "localhost")
    display = f"postgresql://{user}{where}/{path}" + (f"?{'&'.join(shown)}" if shown else "")
    return conninfo, display, ours


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


# A connect that may work in a moment: no answer (refused, timed out: no FATAL), or the
# server's "not now" (libpq gives no SQLSTATE for a failed connect: 57P01-03, 53300).
_NOT_NOW = ("the database system is", "too many clients", "remaining connection slots")


def connect(conninfo: str, display: str, *, prepare: bool, setup: str,
            connect_timeout: float) -> psycopg.Connection:
    """One autocommit connection, set up for jobq; every failure is one line."""
    try:
        conn = psycopg.connect(conninfo, autocommit=True,
                               prepare_threshold=5 if prepare else None,
                               connect_timeout=max(2, round(connect_timeout)))
    except psycopg.Error as e:
        text = str(e)
        soon = "FATAL:" not in text or any(reason in text for reason in _NOT_NOW)
        why = DatabaseUnreachable if soon else DatabaseUnavailable
        raise why(f"{display}: cannot connect ({one_line(e)})") from None
    try:
        if setup:
            conn.execute(setup)
    except psycopg.Error as e:
        conn.close()
        raise DatabaseUnavailable(f"{display}: cannot set up the session ({one_line(e)})") from None
    return conn


class PgDriver:
    """psycopg for ``Pool``: autocommit connections set up by ``setup``."""

    error = psycopg.Error

    def __init__(self, conninfo: str, display: str, *, prepare: bool, setup: str,
                 connect_timeout: float):
        self.conninfo, self.display, self.prepare = conninfo, display, prepare
        self.setup, self.connect_timeout = setup, connect_timeout

    def connect(self) -> psycopg.Connection:
        return connect(self.conninfo, self.display, prepare=self.prepare, setup=self.setup,
                       connect_timeout=self.connect_timeout)

    def broken(self, conn: psycopg.Connection) -> bool:
        return conn.closed or conn.pgconn.status != ConnStatus.OK

    def reset(self, conn: psycopg.Connection) -> None:
        if conn.pgconn.transaction_status != TransactionStatus.IDLE:
            conn.rollback()

    def close(self, conn: psycopg.Connection) -> None:
        conn.close()

    def translate(self, e: psycopg.Error) -> JobqError:
        return translate(e, self.display)

    def surely_rolled_back(self, e: psycopg.Error) -> bool:
        """The server ended the session (admin shutdown, crash recovery, terminate): the
        statement that got this error did not commit. Any other break (the socket closed, no
        answer) leaves it unknown whether a commit that was under way went through."""
        return (e.sqlstate or "").startswith("57P")


PgPool = Pool[psycopg.Connection, psycopg.Error]


def server_time(conn: psycopg.Connection) -> float:
    """The server's clock, in Unix seconds (``ServerClock``'s read)."""
    return float(one(conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8"))[0])
