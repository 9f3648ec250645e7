"""A synchronous view of an application's asyncio connection, for a driver whose
statements can only be awaited on the connection's event loop (psycopg's
``AsyncConnection``; any such driver of a third store): jobq's synchronous write
(``app_connection.py``, through ``Queue``) runs on a thread of its own, and each of its
statements is sent back to the event loop and awaited there, on the caller's connection,
in the caller's transaction. The event loop is free meanwhile, and the statements, the
fence and the rules are those of the synchronous path, written once.

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

T = TypeVar("T")
V = TypeVar("V", bound="LoopView")


async def run_on_thread(view: Callable[[asyncio.AbstractEventLoop], V],
                        write: Callable[[V], T]) -> T:
    """``write(view(loop))`` on a thread, with the caller's context; its result or
    exception."""
    loop = asyncio.get_running_loop()
    call = functools.partial(copy_context().run, write, view(loop))
    return await loop.run_in_executor(None, call)


class LoopView:
    """A connection owned by ``loop``, used only from another thread: a driver's view
    adds what ``app_connection.py`` reads of a connection and its two awaitable calls."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._loop = loop

    def wait(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """``coroutine`` run on the connection's event loop; its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    async def execute_async(self, statement: str,
                            params: Any) -> tuple[list[tuple[Any, ...]], int]:
        """The statement run on the connection: its rows (none for a statement without
        any) and its row count."""
        raise NotImplementedError

    async def execute_many_async(self, statement: str, rows: list[Any]) -> int:
        """The statement run once for each of ``rows``: the row count."""
        raise NotImplementedError


class Rows:
    """A statement's outcome, read whole on the event loop: ``execute`` returns itself
    with the rows and the row count, as a cursor does."""

    def __init__(self, view: LoopView):
        self._view = view
        self._rows: list[tuple[Any, ...]] = []
        self.rowcount = -1

    def execute(self, statement: str, params: Any = None) -> Rows:
        self._rows, self.rowcount = self._view.wait(self._view.execute_async(statement, params))
        return self

    def executemany(self, statement: str, params_seq: Iterable[Any]) -> None:
        self.rowcount = self._view.wait(self._view.execute_many_async(statement, list(params_seq)))
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
