"""The thread pool (the default): synchronous handlers on daemon threads of the worker
process (``jobq-handler-N``), ``async def`` handlers on one event loop thread
(``jobq-asyncio``), started on first use.

A thread cannot be killed: a run the executor abandons keeps its thread until the handler
notices ``ctx.cancelled`` or ends, and whatever it returns then is discarded; an async
handler is cancelled.
"""
from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import Callable
from typing import Any

from ..api.new_jobs import DEFAULT_MAX_PAYLOAD
from ..types import PoolKind
from .pool import Finished, not_started
from .runs import (Outcome, Run, RunState, ahooked, call_handler, hooked, raised,
                   returned)


class ThreadPool:
    kind = PoolKind.THREAD

    def __init__(self, concurrency: int, max_result_bytes: int = DEFAULT_MAX_PAYLOAD):
        self._max_result = max_result_bytes
        # The headroom above the concurrency covers abandoned handlers still running.
        self._threads = DaemonPool(concurrency + max(2, concurrency // 2))
        self._finished: Finished = not_started
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def start(self, finished: Finished, fail: Callable[[str], None]) -> None:
        self._finished = finished

    def run(self, runs: list[Run]) -> None:
        sync = []
        for run in runs:
            task = run.task
            assert task is not None  # a run reaches a pool with its task (see Pool.run)
            if task.is_async:
                run.handle = asyncio.run_coroutine_threadsafe(self._call_async(run),
                                                              self._event_loop())
            else:
                sync.append(run)
        if sync:
            self._threads.submit_each(self._call_sync, sync)

    def cancel(self, run: Run) -> None:
        pass  # the handler reads ctx.cancelled itself

    def stop(self, run: Run) -> None:
        if run.handle is not None:
            run.handle.cancel()

    def close(self) -> None:
        """Let the idle threads and the event loop end (abandoned handlers still running
        are daemon threads: they do not hold the process open)."""
        self._threads.close()
        if self._loop is not None:
            asyncio.run_coroutine_threadsafe(_wind_down(), self._loop)

    def kill(self) -> None:
        pass  # daemon threads end with the process

    def children(self) -> list[tuple[int, str, int | None]]:
        return []

    def _call_sync(self, run: Run) -> None:
        if run.state is not RunState.RUNNING:  # abandoned while waiting for a thread
            return
        outcome: Outcome
        task = run.task
        assert task is not None  # see run()
        if task.hooks is not None:
            self._finished(run, hooked(task.hooks, task, run.job, run.ctx, self._max_result))
            return
        try:
            job = run.job
            outcome = returned(call_handler(task, job.payload, run.ctx, job.queue,
                                            job.trace_context), self._max_result)
        except BaseException as e:  # noqa: BLE001 - a handler's failure is data, never ours
            outcome = raised(e, task)
        self._finished(run, outcome)

    async def _call_async(self, run: Run) -> None:
        outcome: Outcome
        task = run.task
        assert task is not None  # see run()
        if task.hooks is not None:
            self._finished(run, await ahooked(task.hooks, task, run.job, run.ctx,
                                              self._max_result))
            return
        try:
            job = run.job
            outcome = returned(await call_handler(task, job.payload, run.ctx, job.queue,
                                                  job.trace_context), self._max_result)
        except BaseException as e:  # noqa: BLE001
            outcome = raised(e, task)
        self._finished(run, outcome)

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="jobq-asyncio",
                                 daemon=True).start()
            return self._loop


async def _wind_down() -> None:
    """Stop the event loop once every task still on it has seen its cancellation.

    ``loop.stop()`` alone ends the loop after the callbacks already queued: a cancellation
    queued with it would never reach its coroutine, which would miss its ``finally``. A
    handler that swallows its cancellation gets ``ASYNC_GRACE`` seconds, then the loop
    stops without it (its thread is a daemon).
    """
    me = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not me]
    for t in tasks:
        t.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=ASYNC_GRACE)
    asyncio.get_running_loop().stop()


ASYNC_GRACE = 5.0


class DaemonPool:
    """Daemon threads that run functions, started as needed up to ``limit``.

    Daemon threads, unlike ``ThreadPoolExecutor``'s, do not hold the process open at exit:
    a handler abandoned after the grace period must not stop ``jobq run`` from exiting.

    Work is handed on in a chain: ``submit`` wakes one thread (or starts one) only when no
    thread is already on its way to the queue, and a thread that takes an item while more
    wait wakes the next. No item waits while a thread is free to take it, none waits behind
    a running handler, and a thread that finds work as it finishes takes it without a
    sleep and a wake-up.
    """

    def __init__(self, limit: int, name: str = "jobq-handler"):
        self._limit = limit
        self._name = name
        self._lock = threading.Lock()
        self._work: collections.deque[tuple[Callable[..., object], tuple[Any, ...]]] = (
            collections.deque())
        self._sleepers: list[threading.Lock] = []  # idle threads' locks, each held: a sleep
        self._threads = 0
        self._waking = 0  # threads woken or started, not yet at the queue
        self._closed = False

    def submit(self, fn: Callable[..., object], *args: Any) -> None:
        self._put([(fn, args)])

    def submit_each(self, fn: Callable[..., object], items: list[Any]) -> None:
        """``submit(fn, item)`` for each of ``items``, under one hold of the lock."""
        self._put([(fn, (item,)) for item in items])

    def _put(self, work: list[tuple[Callable[..., object], tuple[Any, ...]]]) -> None:
        with self._lock:
            self._work.extend(work)
            if self._waking == 0:
                self._wake_one()

    def _wake_one(self) -> None:
        """Send one more thread to the queue, if one is idle or may be started (the caller
        holds ``_lock``); else the first thread to finish its handler takes the item."""
        if self._sleepers:
            self._waking += 1
            self._sleepers.pop().release()
        elif self._threads < self._limit:
            self._threads += 1
            self._waking += 1
            threading.Thread(target=self._serve, name=f"{self._name}-{self._threads}",
                             daemon=True).start()

    def _serve(self) -> None:
        sleep = threading.Lock()
        sleep.acquire()
        woken = True
        fn: Callable[..., object] | None
        while True:
            with self._lock:
                if woken:
                    self._waking -= 1
                    woken = False
                if self._work:
                    fn, args = self._work.popleft()
                    if self._work and self._waking == 0:
                        self._wake_one()
                elif self._closed:
                    return
                else:
                    self._sleepers.append(sleep)
                    fn = None
            if fn is None:
                sleep.acquire()  # until _wake_one or close releases it
                woken = True
                continue
            fn(*args)

    def close(self) -> None:
        """Let the threads end once the queue is empty (handlers running finish first)."""
        with self._lock:
            self._closed = True
            self._waking += len(self._sleepers)
            for sleep in self._sleepers:
                sleep.release()
            self._sleepers.clear()
