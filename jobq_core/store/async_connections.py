"""An application's asyncio connection given as ``conn=`` (``AsyncQueue``,
``JobContext.acomplete``): jobq's synchronous write for an application's connection
(``app_connection.py`` of each backend, through ``Queue``) run on a synchronous view of
it, off the event loop. The rules and the SQL stay those of the synchronous path.

- aiosqlite: the write runs on aiosqlite's own thread, on the ``sqlite3.Connection`` it
  wraps (``sqlite/async_bridge.py``);
- psycopg ``AsyncConnection``: the write runs on a thread of its own, each statement
  sent back to the event loop and awaited there on the caller's connection
  (``postgres/async_bridge.py``).

Neither driver is imported here: a connection of theirs exists only once the application
has imported it.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import UnusableConnection

T = TypeVar("T")


async def run_on(conn: Any, write: Callable[[Any], T]) -> T:
    """``write(view)`` with ``view`` the synchronous view of ``conn``, its result or its
    exception; ``UnusableConnection`` (nothing written) for a connection of neither
    driver's asyncio kind."""
    driver = type(conn).__module__.split(".")[0]
    if driver == "aiosqlite":
        from .sqlite.async_bridge import run

        return await run(conn, write)
    if driver == "psycopg" and type(conn).__name__ != "Connection":
        from .postgres.async_bridge import run as run_pg

        return await run_pg(conn, write)
    raise UnusableConnection(
        f"conn= must be the application's asyncio connection to the queue's database (a "
        f"SQLAlchemy AsyncSession or AsyncConnection, a psycopg AsyncConnection, an "
        f"aiosqlite connection), got {type(conn).__module__}.{type(conn).__qualname__} "
        "(a synchronous connection goes to Queue); nothing was written")
