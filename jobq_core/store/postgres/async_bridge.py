"""A psycopg ``AsyncConnection`` given as ``conn=`` in asyncio code: jobq's synchronous
write (``app_connection.py``, through ``Queue``) runs on a thread of its own, over
``SyncView``, a synchronous view of the connection whose every statement is sent back to
the event loop and awaited there, on the caller's connection, in the caller's transaction.
The event loop is free meanwhile, and the statements, the fence and the rules are those of
the synchronous path, written once.

The caller awaits the write, so nothing else uses its connection until it returns. A
statement's rows are read whole before the thread goes on (jobq's statements on an
application's connection return a row or a few).
"""
from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine, Iterable
from contextvars import copy_context
from typing import Any, TypeVar

import psycopg
from psycopg.abc import Params
from psycopg.rows import tuple_row

T = TypeVar("T")


async def run(conn: psycopg.AsyncConnection[Any], write: Callable[[Any], T]) -> T:
    """``write(SyncView(conn))`` on a thread; its result or exception."""
    loop = asyncio.get_running_loop()
    view = SyncView(conn, loop)
    call = functools.partial(copy_context().run, write, view)
    return await loop.run_in_executor(None, call)


class SyncView:
    """What ``app_connection.py`` uses of a ``psycopg.Connection``, over an
    ``AsyncConnection`` owned by ``loop``; used only from another thread."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], loop: asyncio.AbstractEventLoop):
        self.async_connection = conn
        self._loop = loop

    @property
    def info(self) -> psycopg.ConnectionInfo:
        return self.async_connection.info

    @property
    def closed(self) -> bool:
        return self.async_connection.closed

    @property
    def broken(self) -> bool:
        return self.async_connection.broken

    @property
    def autocommit(self) -> bool:
        return self.async_connection.autocommit

    def cursor(self, *, row_factory: object = tuple_row) -> Rows:
        return Rows(self)

    def wait(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """``coroutine`` run on the connection's event loop; its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def transaction(self) -> Any:
        raise NotImplementedError("jobq opens no savepoint on an application's connection")


class Rows:
    """A statement's outcome, read whole on the event loop: ``execute`` returns itself
    with the rows and the row count, as a cursor does."""

    def __init__(self, view: SyncView):
        self._view = view
        self._rows: list[tuple[Any, ...]] = []
        self.rowcount = -1

    def execute(self, statement: str, params: Params | None = None) -> Rows:
        self._rows, self.rowcount = self._view.wait(
            _execute(self._view.async_connection, statement, params))
        return self

    def executemany(self, statement: str, params_seq: Iterable[Params]) -> None:
        rows = list(params_seq)
        self.rowcount = self._view.wait(
            _execute_many(self._view.async_connection, statement, rows))
        self._rows = []

    def __enter__(self) -> Rows:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows.pop(0) if self._rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows, []
        return rows


async def _execute(conn: psycopg.AsyncConnection[Any], statement: str,
                   params: Params | None) -> tuple[list[tuple[Any, ...]], int]:
    cur = conn.cursor(row_factory=tuple_row)
    await cur.execute(statement, params)
    rows = await cur.fetchall() if cur.description is not None else []
    return rows, cur.rowcount


async def _execute_many(conn: psycopg.AsyncConnection[Any], statement: str,
                        rows: list[Params]) -> int:
    async with conn.cursor() as cur:  # pipelined by psycopg, as the store's own
        await cur.executemany(statement, rows)
        return cur.rowcount
