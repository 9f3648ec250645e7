"""The application's connection given as ``conn=``: a driver connection as it is, or a
SQLAlchemy ``Connection`` or ``Session`` unwrapped to the driver connection under it.

Every ``conn=`` goes through ``unwrap`` (``Queue.enqueue``, ``enqueue_many``, ``complete``,
``JobContext.complete``), or in asyncio code through ``on_async`` (``AsyncQueue``,
``JobContext.acomplete``), which runs the same synchronous path off the event loop; the store then checks and writes on the driver connection
(``store/*/app_connection.py``), inside the transaction SQLAlchemy holds on it, which
SQLAlchemy commits or rolls back: jobq never does.

SQLAlchemy is never imported here: an object of its can only exist once the application
has imported it, so without it installed this costs one dictionary lookup.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import UnusableConnection

T = TypeVar("T")


def unwrap(conn: Any) -> Any:
    """The driver connection under a SQLAlchemy ``Connection``, ``Session`` or
    ``scoped_session`` (its transaction begun, as SQLAlchemy would begin it for the
    application's next statement); any other object unchanged.

    SQLAlchemy must have a transaction open on it that it will commit: its "autobegin"
    is started here when none is, so ``conn.commit()`` or ``session.commit()`` commits
    jobq's write with the application's. An engine in AUTOCOMMIT isolation hands over a
    driver connection in autocommit mode, which the store refuses
    (``UnusableConnection``). Sync only: ``AsyncConnection`` and ``AsyncSession`` are
    refused (``on_async`` takes them)."""
    if "sqlalchemy" not in sys.modules or not type(conn).__module__.startswith("sqlalchemy."):
        return conn
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session, scoped_session

    if isinstance(conn, scoped_session):
        conn = conn()
    if isinstance(conn, Session):
        conn = conn.connection()  # the session's transaction, begun if it was not
    if not isinstance(conn, Connection):
        raise UnusableConnection(
            f"conn= is a SQLAlchemy {type(conn).__qualname__}; Queue joins the transaction "
            "of a synchronous Connection or Session (give an AsyncConnection or AsyncSession "
            "to AsyncQueue, or to ctx.acomplete); nothing was written")
    if conn.closed or conn.invalidated:
        raise UnusableConnection("the SQLAlchemy connection given with conn= is closed; "
                                 "nothing was written")
    if not conn.in_transaction():
        conn.begin()  # what its next execute() would do (autobegin): its commit() is ours
    return conn.connection.dbapi_connection


async def on_async(conn: Any, write: Callable[[Any], T]) -> T:
    """``write(sync)``, where ``sync`` is a synchronous view of the application's asyncio
    connection ``conn`` (a SQLAlchemy ``AsyncSession``, ``async_scoped_session`` or
    ``AsyncConnection``, unwrapped to its driver connection as ``unwrap`` does, its
    transaction begun; a psycopg ``AsyncConnection``; an aiosqlite ``Connection``), run
    where it cannot block the event loop (``store.async_connections.run_on``). ``write``
    is ``Queue``'s synchronous ``conn=`` path: the rules and the SQL are that path's."""
    from ..store.async_connections import run_on

    return await run_on(await _driver(conn), write)


async def _driver(conn: Any) -> Any:
    """The asyncio driver connection under a SQLAlchemy asyncio object, its transaction
    begun (``unwrap``'s rules); any other object unchanged."""
    if "sqlalchemy" not in sys.modules or not type(conn).__module__.startswith("sqlalchemy."):
        return conn
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession, async_scoped_session

    if isinstance(conn, async_scoped_session):
        conn = conn()
    if isinstance(conn, AsyncSession):
        conn = await conn.connection()  # the session's transaction, begun if it was not
    if not isinstance(conn, AsyncConnection):
        raise UnusableConnection(
            f"conn= is a SQLAlchemy {type(conn).__qualname__}; in asyncio code jobq joins "
            "the transaction of an AsyncConnection or AsyncSession (give a synchronous "
            "Connection or Session to Queue); nothing was written")
    if conn.closed or conn.invalidated:
        raise UnusableConnection("the SQLAlchemy connection given with conn= is closed; "
                                 "nothing was written")
    if not conn.in_transaction():
        await conn.begin()  # its autobegin: its commit() is ours
    raw = await conn.get_raw_connection()
    return raw.driver_connection
