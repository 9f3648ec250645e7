"""An aiosqlite connection given as ``conn=`` in asyncio code: jobq's synchronous write
(``app_connection.py``, through ``Queue``) runs on aiosqlite's own thread, on the
``sqlite3.Connection`` it wraps, queued behind the application's statements as one of its
own: the caller's transaction, and nothing of it done on the event loop.

aiosqlite has no public call for "run this function on your connection": ``_execute`` and
``_conn`` are what its own methods use (and what SQLAlchemy's aiosqlite dialect uses too).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ...errors import UnusableConnection

T = TypeVar("T")


async def run(conn: Any, write: Callable[[Any], T]) -> T:
    """``write(sqlite3_connection)`` on aiosqlite's thread; its result or exception."""
    try:
        sync = conn._conn
    except ValueError:  # aiosqlite: "no active connection"
        raise UnusableConnection("the aiosqlite connection given with conn= is closed; "
                                 "nothing was written") from None
    result: T = await conn._execute(write, sync)
    return result
