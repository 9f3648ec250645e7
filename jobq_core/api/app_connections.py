"""The application's connection given as ``conn=``: a driver connection as it is, or a
SQLAlchemy ``Connection`` or ``Session`` unwrapped to the driver connection under it.

Every ``conn=`` goes through ``unwrap`` (``Queue.enqueue``, ``enqueue_many``, ``complete``,
``JobContext.complete``); the store then checks and writes on the driver connection
(``store/*/app_connection.py``), inside the transaction SQLAlchemy holds on it, which
SQLAlchemy commits or rolls back: jobq never does.

SQLAlchemy is never imported here: an object of its can only exist once the application
has imported it, so without it installed this costs one dictionary lookup.
"""
from __future__ import annotations

import sys
from typing import Any

from ..errors import UnusableConnection


def unwrap(conn: Any) -> Any:
    """The driver connection under a SQLAlchemy ``Connection``, ``Session`` or
    ``scoped_session`` (its transaction begun, as SQLAlchemy would begin it for the
    application's next statement); any other object unchanged.

    SQLAlchemy must have a transaction open on it that it will commit: its "autobegin"
    is started here when none is, so ``conn.commit()`` or ``session.commit()`` commits
    jobq's write with the application's. An engine in AUTOCOMMIT isolation hands over a
    driver connection in autocommit mode, which the store refuses
    (``UnusableConnection``). Sync only: ``AsyncConnection`` and ``AsyncSession`` are
    refused."""
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
            f"conn= is a SQLAlchemy {type(conn).__qualname__}; jobq joins the transaction "
            "of a synchronous Connection or Session (AsyncConnection and AsyncSession are "
            "not supported); nothing was written")
    if conn.closed or conn.invalidated:
        raise UnusableConnection("the SQLAlchemy connection given with conn= is closed; "
                                 "nothing was written")
    if not conn.in_transaction():
        conn.begin()  # what its next execute() would do (autobegin): its commit() is ours
    return conn.connection.dbapi_connection
