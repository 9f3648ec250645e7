"""AsyncQueue: ``Queue``'s producer and reader API as coroutines, for asyncio code.

Each call runs ``Queue``'s own method on a thread of a small pool shared by every
AsyncQueue (``jobq-async-N``), with the caller's context variables (OpenTelemetry's
current span among them), so the event loop never waits on the database and every job
operation stays written once, in the store. Chosen by measurement against a native
psycopg ``AsyncConnection`` enqueue on PostgreSQL (``bench/async_enqueue.py``, figures in
``docs/performance.md``).

``conn=`` takes the application's asyncio connection (``app_connections.on_async``): a
SQLAlchemy ``AsyncSession`` or ``AsyncConnection``, a psycopg ``AsyncConnection`` or an
aiosqlite connection; ``Queue``'s synchronous path then writes through a synchronous view
of it, inside the caller's transaction.
"""
from __future__ import annotations

import asyncio
import builtins
import contextvars
import functools
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, TypeVar

from ..queue import Queue
from ..types import Attempt, Dependencies, ErrorGroup, Job, JobStatus, QueueStats, Rate, Stats, Why
from .app_connections import on_async
from .new_jobs import Item
from .waiting import await_job

T = TypeVar("T")

THREADS = 8
"""The shared pool's threads: a PostgreSQL store keeps ``pool_size`` connections (2 by
default) and SQLite takes one writer at a time, so more threads would only wait there."""

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _forget_pool() -> None:
    """In a forked child: the parent's threads are not there, and an executor that
    believes it has idle ones would never run a call; the next call makes a new pool."""
    global _pool
    _pool = None


os.register_at_fork(after_in_child=_forget_pool)


def _threads() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(THREADS, thread_name_prefix="jobq-async")
    return _pool


class AsyncQueue:
    """``Queue``'s methods for producers and readers, as coroutines with the same names
    and arguments, on either store; the event loop never waits on the database.

    ``AsyncQueue(database, **options)`` opens a ``Queue(database, **options)`` of its own,
    which ``close()`` (or leaving ``async with``) closes; ``AsyncQueue(queue)`` uses an open
    ``Queue`` and never closes it. Safe to share between tasks and event loops.

    A call cancelled while its write is under way does not stop the write: an ``enqueue``
    may still commit (awaiting it again is not possible; read the job back by
    ``unique_key`` if it matters)."""

    def __init__(self, database: Queue | str | os.PathLike[str], **options: Any):
        if isinstance(database, Queue):
            if options:
                raise TypeError(f"AsyncQueue(queue) takes no options (got "
                                f"{', '.join(sorted(options))}): give them to Queue()")
            self.queue, self._owned = database, False
        elif isinstance(database, (str, os.PathLike)):
            self.queue, self._owned = Queue(database, **options), True
        else:
            raise TypeError(f"AsyncQueue needs a Queue or a database path or URL, got "
                            f"{type(database).__name__}")

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(_threads(), call)

    # -- producing ------------------------------------------------------------------------

    async def enqueue(self, kind: str, payload: Any = None, *, queue: str | None = None,
                      priority: int | None = None, delay: float = 0,
                      run_at: float | datetime | None = None, max_attempts: int | None = None,
                      unique_key: str | None = None, conn: Any = None,
                      after: Iterable[int] | None = None, allow_failed: bool = False,
                      key: str | None = None) -> int:
        """``Queue.enqueue``. With ``conn`` (a SQLAlchemy ``AsyncSession`` or
        ``AsyncConnection``, a psycopg ``AsyncConnection`` or an aiosqlite connection to
        the queue's database), the job is inserted in the caller's transaction, which jobq
        never commits or rolls back, with ``Queue.enqueue``'s rules."""
        enqueue = functools.partial(
            self.queue.enqueue, kind, payload, queue=queue, priority=priority, delay=delay,
            run_at=run_at, max_attempts=max_attempts, unique_key=unique_key, after=after,
            allow_failed=allow_failed, key=key)
        if conn is None:
            return await self._call(enqueue)
        return await on_async(conn, lambda sync: enqueue(conn=sync))

    async def enqueue_many(self, items: Iterable[Item], *, conn: Any = None) -> list[int]:
        """``Queue.enqueue_many``: all the jobs in one transaction (the caller's, with
        ``conn`` as for ``enqueue``); their ids."""
        items = builtins.list(items)
        if conn is None:
            return await self._call(self.queue.enqueue_many, items)
        return await on_async(conn, lambda sync: self.queue.enqueue_many(items, conn=sync))

    async def chain(self, items: Iterable[Item], *, conn: Any = None) -> list[int]:
        """``Queue.chain``: jobs that run one after the other; their ids (in the caller's
        transaction with ``conn``, as for ``enqueue``)."""
        items = builtins.list(items)
        if conn is None:
            return await self._call(self.queue.chain, items)
        return await on_async(conn, lambda sync: self.queue.chain(items, conn=sync))

    async def group(self, items: Iterable[Item], *, then: Item,
                    conn: Any = None) -> tuple[list[int], int]:
        """``Queue.group``: jobs that run in parallel, then ``then``; (their ids, then's),
        in the caller's transaction with ``conn``."""
        items = builtins.list(items)
        if conn is None:
            return await self._call(self.queue.group, items, then=then)
        return await on_async(conn, lambda sync: self.queue.group(items, then=then, conn=sync))

    # -- reading --------------------------------------------------------------------------

    async def wait(self, job_id: int, timeout: float | None = None) -> Job:
        """``Queue.wait``: the job once it has finished (succeeded, dead or cancelled),
        with its ``result`` or ``error``; ``TimeoutError`` when it has not within
        ``timeout`` seconds (None: no limit), ``JobNotFound`` for an unknown id. Only this
        coroutine waits: the event loop runs on."""
        return await await_job(self.queue, job_id, timeout)

    async def get(self, job_id: int) -> Job | None:
        return await self._call(self.queue.get, job_id)

    async def list(self, status: str | None = None, queue: str | None = None,
                   kind: str | None = None, *, worker: str | None = None,
                   error_contains: str | None = None, limit: int = 100, offset: int = 0,
                   payloads: bool = True, prefix: bool = False, search: Sequence[str] = (),
                   key: str | None = None, newest: int | None = None) -> builtins.list[Job]:
        """``Queue.list``: jobs matching every filter given."""
        return await self._call(self.queue.list, status, queue, kind, worker=worker,
                                error_contains=error_contains, limit=limit, offset=offset,
                                payloads=payloads, prefix=prefix, search=search, key=key,
                                newest=newest)

    async def count(self, status: str | None = None, queue: str | None = None,
                    kind: str | None = None, *, worker: str | None = None,
                    error_contains: str | None = None, prefix: bool = False,
                    search: Sequence[str] = (), key: str | None = None,
                    newest: int | None = None) -> int:
        return await self._call(self.queue.count, status, queue, kind, worker=worker,
                                error_contains=error_contains, prefix=prefix, search=search,
                                key=key, newest=newest)

    async def why(self, job_id: int) -> Why:
        """``Queue.why``: why the job is not running (or what it is doing)."""
        return await self._call(self.queue.why, job_id)

    async def attempts(self, job_id: int) -> builtins.list[Attempt]:
        return await self._call(self.queue.attempts, job_id)

    async def dependencies(self, job_id: int) -> Dependencies:
        return await self._call(self.queue.dependencies, job_id)

    async def stats(self, *, window: float = 3600.0) -> Stats:
        return await self._call(self.queue.stats, window=window)

    async def queues(self) -> dict[str, QueueStats]:
        return await self._call(self.queue.queues)

    async def dead_groups(self, *, queue: str | None = None, kind: str | None = None,
                          error_contains: str | None = None, limit: int = 100,
                          prefix: bool = False, search: Sequence[str] = (),
                          key: str | None = None) -> builtins.list[ErrorGroup]:
        return await self._call(self.queue.dead_groups, queue=queue, kind=kind,
                                error_contains=error_contains, limit=limit, prefix=prefix,
                                search=search, key=key)

    # -- administering --------------------------------------------------------------------

    async def cancel(self, job_id: int, *, terminate: bool = False) -> JobStatus:
        """``Queue.cancel``: ``cancelled`` for a pending job; ``running`` for one whose
        worker is asked to stop it; with ``terminate``, ``cancelled`` for a running one
        too, which its worker stops."""
        return await self._call(self.queue.cancel, job_id, terminate=terminate)

    async def retry(self, job_id: int, *, force: bool = False) -> None:
        """``Queue.retry``: a dead or cancelled job back to pending."""
        await self._call(self.queue.retry, job_id, force=force)

    async def retry_dead(self, *, queue: str | None = None, kind: str | None = None,
                         error_contains: str | None = None, prefix: bool = False,
                         search: Sequence[str] = ()) -> int:
        return await self._call(self.queue.retry_dead, queue=queue, kind=kind,
                                error_contains=error_contains, prefix=prefix, search=search)

    async def pause(self, queue: str) -> None:
        await self._call(self.queue.pause, queue)

    async def resume(self, queue: str) -> None:
        await self._call(self.queue.resume, queue)

    async def set_limit(self, queue: str, *, concurrency: int | None = None,
                        rate: str | Rate | None = None, key_concurrency: int | None = None,
                        ordered: bool = False) -> None:
        await self._call(self.queue.set_limit, queue, concurrency=concurrency, rate=rate,
                         key_concurrency=key_concurrency, ordered=ordered)

    # -- misc -----------------------------------------------------------------------------

    async def check(self, *, wait: float = 0.0) -> None:
        """``Queue.check``: on PostgreSQL, connect now (tables checked or made), trying
        again for up to ``wait`` seconds while the server does not answer."""
        await self._call(self.queue.check, wait=wait)

    async def close(self) -> None:
        """Close the ``Queue`` this AsyncQueue opened; one it was given stays open."""
        if self._owned:
            await self._call(self.queue.close)

    async def __aenter__(self) -> AsyncQueue:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncQueue({self.queue.database!r})"
