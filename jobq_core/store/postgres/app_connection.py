"""jobq's writes on an application's own ``psycopg.Connection``, inside its transaction
(``store/app_writes.py``): which connections may take them, and their NOTIFY.

Rules, checked before anything is written (``UnusableConnection`` otherwise):

* the connection is a synchronous ``psycopg.Connection`` (or the ``SyncView`` of an
  ``AsyncConnection``, ``async_bridge.py``), open, and not in a failed transaction;
* it reaches the store's jobq tables: the same server (``pg_postmaster_start_time()``:
  the same instant for every session of one server, another for any other server), the
  same database, and the same ``jobq_jobs`` table through its ``search_path`` (its oid).
  The identity query reads only functions every role may call, so it cannot fail and
  abort the caller's transaction; it runs once per connection (cached while the
  connection lives);
* jobq's statement joins a transaction of the caller's: one is open, or the connection
  is not in autocommit mode (psycopg then opens one with the first statement, as it would
  for the caller's own). Autocommit with no transaction open is refused: the write would
  commit on its own, at once.

An enqueue sends ``pg_notify`` for the queues of its jobs in the caller's transaction
(delayed ones too: an idle worker then reads when the next job is due), so idle workers
hear of them when it commits, and never when it rolls back. It does not go through the
store's per-queue limit (``notify.Notifier``): the caller's transaction ends when the
caller says, which the limiter cannot know.

Use READ COMMITTED (PostgreSQL's default). Under it a fenced completion that meets a row
locked by the reaper or a heartbeat waits for it and then checks the fence again; under
REPEATABLE READ or SERIALIZABLE the same meeting is a serialization failure, reported as
the error it is, even when the job is still ours. The caller's transaction holds the job's
row lock from the completion to its commit: nothing else waits for it but that row.
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import NoReturn

import psycopg
from psycopg.abc import Params
from psycopg.pq import TransactionStatus
from psycopg.rows import tuple_row

from ...errors import UnusableConnection
from ..app_writes import AppWrites
from ..base import ConnectionIdentity
from .async_bridge import SyncView
from .dialect import DIALECT, NOTIFY, PgConnection, text_array
from .connection import translate

STORE = "postgresql"
IDENTITY = (
    # epoch seconds, not text: the text form follows each session's TimeZone and DateStyle
    "SELECT extract(epoch FROM pg_postmaster_start_time())::float8, current_database(), "
    "to_regclass('jobq_jobs')::oid::bigint, "
    "coalesce(host(inet_server_addr()), 'local socket'), current_setting('port')"
)

# conn (an AsyncConnection for its SyncView) -> (its server process's pid, its identity)
_known: weakref.WeakKeyDictionary[psycopg.Connection | psycopg.AsyncConnection,
                                  tuple[int, ConnectionIdentity]] = weakref.WeakKeyDictionary()
_known_lock = threading.Lock()


def identity(conn: object) -> ConnectionIdentity:
    """The database and jobq tables ``conn`` reaches; ``UnusableConnection`` when it is
    not a usable psycopg connection or has no transaction jobq's write could join (see
    the module's rules)."""
    if isinstance(conn, psycopg.AsyncConnection):
        raise UnusableConnection("conn= is an asyncio psycopg connection; Queue writes on a "
                                 "synchronous psycopg.Connection (give an AsyncConnection to "
                                 "AsyncQueue, or to ctx.acomplete); nothing was written")
    if not isinstance(conn, (psycopg.Connection, SyncView)):
        raise UnusableConnection(
            f"conn= must be the application's psycopg.Connection to the queue's database, "
            f"got {type(conn).__module__}.{type(conn).__qualname__}; nothing was written")
    if conn.closed or conn.broken:
        raise UnusableConnection("the connection given with conn= is closed; nothing was "
                                 "written")
    status = conn.info.transaction_status
    if status == TransactionStatus.INERROR:
        raise UnusableConnection("the transaction on the connection given with conn= failed "
                                 "earlier: roll it back first; nothing was written")
    if status == TransactionStatus.IDLE and conn.autocommit:
        raise UnusableConnection(
            "the connection given with conn= is in autocommit mode with no transaction open, "
            "so jobq's write would commit on its own at once: open one first (with "
            "conn.transaction(): ...); nothing was written")
    pid = conn.info.backend_pid
    key = conn.async_connection if isinstance(conn, SyncView) else conn
    with _known_lock:
        known = _known.get(key)
    if known is not None and known[0] == pid:
        return known[1]
    try:
        cursor = conn.cursor() if isinstance(conn, SyncView) else _cursor(conn)
        row = cursor.execute(IDENTITY).fetchone()
    except psycopg.Error as e:
        raise translate(e, "the connection given with conn=") from e
    assert row is not None  # a SELECT with no FROM returns one row
    start, database, table, host, port = row
    where = f"database {database!r} on {host}:{port}"
    if table is None:
        where += " (no jobq_jobs table in its search_path)"
    found = ConnectionIdentity(STORE, (start, database, table), where)
    with _known_lock:
        _known[key] = (pid, found)
    return found


class AppCursor:
    """The application's connection as the engine uses one of the store's own: plain tuple
    rows whatever row factory the application set, and the transaction it is in."""

    def __init__(self, conn: psycopg.Connection):
        self._conn = conn
        self.info = conn.info

    def execute(self, statement: str, params: Params | None = None) -> psycopg.Cursor:
        return _cursor(self._conn).execute(statement, params)

    def cursor(self) -> psycopg.Cursor:
        return _cursor(self._conn)

    def transaction(self) -> AbstractContextManager[object]:
        """The application's connection's ``transaction()`` (a savepoint inside its
        transaction): the dialect's ``PgConnection`` has it (only the claim uses it, never
        run on an application's connection)."""
        return self._conn.transaction()


def notify(c: PgConnection, queues: Iterable[str]) -> None:
    """The NOTIFY of ``queues`` in the caller's transaction: sent when it commits."""
    names = sorted(set(queues))
    if names:
        c.execute(NOTIFY, (text_array(names),))


def _failed(conn: object, e: psycopg.Error) -> NoReturn:
    raise translate(e, "the connection given with conn=") from e


def _cursor(conn: psycopg.Connection) -> psycopg.Cursor:
    """A cursor that returns plain tuples, whatever row factory the application set."""
    return conn.cursor(row_factory=tuple_row)


_WRITES = AppWrites(DIALECT, AppCursor, psycopg.Error, _failed, notify)
insert_many, complete, on_app = _WRITES.insert_many, _WRITES.complete, _WRITES.on_app
