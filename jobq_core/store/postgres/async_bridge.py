"""A psycopg ``AsyncConnection`` given as ``conn=`` in asyncio code: ``SyncView``, its
synchronous view (``store/async_view.py``), on which jobq's synchronous write runs."""
from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg.abc import Params
from psycopg.rows import tuple_row

from ..async_view import LoopView, Rows, run_on_thread

T = TypeVar("T")


async def run(conn: psycopg.AsyncConnection[Any], write: Callable[[Any], T]) -> T:
    """``write(SyncView(conn))`` on a thread; its result or exception."""
    return await run_on_thread(lambda loop: SyncView(conn, loop), write)


class SyncView(LoopView):
    """What ``app_connection.py`` uses of a ``psycopg.Connection``, over an
    ``AsyncConnection`` owned by ``loop``; used only from another thread."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], loop: asyncio.AbstractEventLoop):
        super().__init__(loop)
        self.async_connection = conn

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

    def transaction(self) -> Any:
        raise NotImplementedError("jobq opens no savepoint on an application's connection")

    async def execute_async(self, statement: str,
                            params: Params | None) -> tuple[list[tuple[Any, ...]], int]:
        cur = self.async_connection.cursor(row_factory=tuple_row)
        await cur.execute(statement, params)
        rows = await cur.fetchall() if cur.description is not None else []
        return rows, cur.rowcount

    async def execute_many_async(self, statement: str, rows: list[Params]) -> int:
        async with self.async_connection.cursor() as cur:  # pipelined, as the store's own
            await cur.executemany(statement, rows)
            return cur.rowcount
