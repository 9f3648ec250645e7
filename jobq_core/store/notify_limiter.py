"""The change signal a server store sends after work becomes runnable, limited per queue
(PostgreSQL's NOTIFY: ``postgres/notify.py`` says why it must be limited).

A transaction that makes jobs runnable asks ``NotifyLimiter.due`` which of its queues to
notify and sends those in the same transaction, so the signal arrives when the jobs are
visible; a process notifies a queue at most once per ``NotifyLimiter.EVERY`` seconds
(River's limiter, shorter window).

The rule, per queue: the first enqueue after a quiet window notifies at once (an idle
worker starts it within milliseconds); one that falls inside the window of the last
notification is held, and a single trailing notification goes out when that window ends,
for every job held meanwhile (``send``). Held queues are armed only once their transaction
has ended (``flush``): a trailing notification sent before the commit would wake the
workers to find nothing, and the jobs would wait for the poll.

Why 10 ms and not River's 100 ms: a job held back waits for the rest of the window, so the
window bounds the latency of a steady trickle. With 100 ms, jobs arriving 50 ms apart
waited 54 ms (p50) for the trailing notification; with 25 ms, jobs 20 ms apart still
waited 14 ms; with 10 ms they start in 3 to 6 ms. A burst of single enqueues then sends at
most 100 notifications a second per queue per process, and its enqueue rate was the same
as with 25 ms (the measurements are in docs/performance.md, "Enqueue-to-start latency").
"""
from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable

from ..errors import JobqError

log = logging.getLogger("jobq.store")


class NotifyLimiter:
    """Which queues a transaction should notify now; the trailing notification for the
    others (``send``), from a thread of its own started when first needed."""

    EVERY = 0.010

    def __init__(self, send: Callable[[list[str]], object]):
        self._send = send
        self._lock = threading.Condition()
        self._sent: dict[str, float] = {}  # queue -> monotonic time of its last notification
        self._held: set[str] = set()  # armed: notify when their window ends
        self._local = threading.local()  # queues this thread's transaction held back
        self._thread: threading.Thread | None = None
        self._closed = False
        self._pid = os.getpid()

    def due(self, queues: Iterable[str]) -> list[str]:
        """The queues among ``queues`` to notify now (marked as sent). The others are held
        for this thread's ``flush`` once its transaction has ended."""
        now = time.monotonic()
        out = []
        with self._lock:
            self._after_fork()
            for q in set(queues):
                if now - self._sent.get(q, -1e9) >= self.EVERY:
                    self._sent[q] = now
                    out.append(q)
                else:
                    self._mine().add(q)
        return out

    def flush(self) -> None:
        """Arm the trailing notification for what this thread's last transaction held back
        (call it after the transaction ended, committed or not: a spurious notification
        costs a look, a missing one a poll interval)."""
        held = self._mine()
        if not held:
            return
        with self._lock:
            self._after_fork()
            armed = held <= self._held  # the thread's wait already ends in time for them
            self._held |= held
            held.clear()
            if self._closed or armed:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._trail, name="jobq-notify",
                                                daemon=True)
                self._thread.start()
            self._lock.notify()

    def _mine(self) -> set[str]:
        held = getattr(self._local, "held", None)
        if held is None:
            held = self._local.held = set()
        return held

    def _after_fork(self) -> None:
        """In a forked child the parent's thread does not exist: start afresh (caller
        holds the lock)."""
        if self._pid != os.getpid():
            self._pid, self._thread, self._held, self._sent = os.getpid(), None, set(), {}

    def _trail(self) -> None:
        while True:
            with self._lock:
                while True:
                    if self._closed or self._pid != os.getpid():
                        return
                    now = time.monotonic()
                    ends = {q: self._sent.get(q, -1e9) + self.EVERY for q in self._held}
                    ready = sorted(q for q, end in ends.items() if end <= now)
                    if ready:
                        break
                    self._lock.wait(min(ends.values()) - now if ends else None)
                for q in ready:
                    self._sent[q] = now
                self._held.difference_update(ready)
            try:
                self._send(ready)
            except JobqError as e:  # the watchers' poll will find the jobs
                log.debug("trailing notification failed: %s", e)

    def close(self) -> None:
        """Stop the trailing thread; what it still held is sent now (a script that
        enqueues twice and exits would otherwise leave its second job to the poll)."""
        with self._lock:
            self._closed = True
            self._lock.notify()
            held = sorted(self._held) if self._pid == os.getpid() else []
            self._held.clear()
        if held:
            try:
                self._send(held)
            except JobqError as e:
                log.debug("the last trailing notification failed: %s", e)
