"""The thread pool that runs synchronous handlers (``jobq-handler-N``), made of daemon
threads. The executor hands it work; another pool would plug in there."""
from __future__ import annotations

import queue
import threading


class DaemonPool:
    """Daemon threads that run handlers, started as needed up to ``limit``.

    Daemon threads, unlike ``ThreadPoolExecutor``'s, do not hold the process open at exit:
    a handler abandoned after the grace period must not stop ``jobq run`` from exiting.
    The headroom above the worker's concurrency covers abandoned handlers still running.
    """

    def __init__(self, limit: int):
        self._limit = limit
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
                         name=f"jobq-handler-{n}", daemon=True).start()

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
