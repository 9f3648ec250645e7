"""The thread pool (the default): synchronous handlers on daemon threads of the worker
process (``jobq-handler-N``), ``async def`` handlers on one event loop thread
(``jobq-asyncio``), started on first use.

A thread cannot be killed: a run the executor abandons keeps its thread until the handler
notices ``ctx.cancelled`` or ends, and whatever it returns then is discarded; an async
handler is cancelled.
"""
from __future__ import annotations

import asyncio
import queue
import threading

from ..new_jobs import DEFAULT_MAX_PAYLOAD
from ..types import PoolKind
from .pool import Finished
from .runs import Run, RunState, call_handler, raised, returned


class ThreadPool:
    kind = PoolKind.THREAD

    def __init__(self, concurrency: int, max_result_bytes: int = DEFAULT_MAX_PAYLOAD):
        self._max_result = max_result_bytes
        # The headroom above the concurrency covers abandoned handlers still running.
        self._threads = DaemonPool(concurrency + max(2, concurrency // 2))
        self._finished: Finished | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def start(self, finished: Finished, fail) -> None:
        self._finished = finished

    def run(self, run: Run) -> None:
        if run.task.is_async:
            run.handle = asyncio.run_coroutine_threadsafe(self._call_async(run),
                                                          self._event_loop())
        else:
            self._threads.submit(self._call_sync, run)

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

    def children(self) -> list:
        return []

    def _call_sync(self, run: Run) -> None:
        if run.state is not RunState.RUNNING:  # abandoned while waiting for a thread
            return
        try:
            job = run.job
            outcome = returned(call_handler(run.task, job.payload, run.ctx, job.queue,
                                            job.trace_context), self._max_result)
        except BaseException as e:  # noqa: BLE001 - a handler's failure is data, never ours
            outcome = raised(e)
        self._finished(run, outcome)

    async def _call_async(self, run: Run) -> None:
        try:
            job = run.job
            outcome = returned(await call_handler(run.task, job.payload, run.ctx, job.queue,
                                                  job.trace_context), self._max_result)
        except BaseException as e:  # noqa: BLE001
            outcome = raised(e)
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
    """

    def __init__(self, limit: int, name: str = "jobq-handler"):
        self._limit = limit
        self._name = name
        self._work: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0

    def submit(self, fn, *args) -> None:
        with self._lock:
            if self._idle > 0:  # reserve an idle thread for this item
                self._idle -= 1
                self._work.put((fn, args, True))
                return
            if self._threads >= self._limit:
                self._work.put((fn, args, False))  # the first thread to free up takes it
                return
            self._threads += 1
            n = self._threads
        threading.Thread(target=self._serve, args=((fn, args, True),),
                         name=f"{self._name}-{n}", daemon=True).start()

    def _serve(self, item) -> None:
        while item is not None:
            fn, args, _ = item
            fn(*args)
            with self._lock:
                self._idle += 1
            item = self._work.get()
            if item is not None and not item[2]:
                with self._lock:
                    self._idle -= 1
        self._work.put(None)  # pass the stop on to the next thread

    def close(self) -> None:
        self._work.put(None)
