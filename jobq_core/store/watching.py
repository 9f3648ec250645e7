"""What stores' change signals (``types.Watch``) share.

* ``WakePipe`` (``common/wake_pipe.py``): how ``Watch.wake`` (from another thread or a
  signal handler) makes a watch's ``select`` return, in every store's watch.
* ``PolledWatch``: the signal every store can have, a cheap read polled every second or
  so; a store with a push signal (PostgreSQL's LISTEN) adds it to this one.
"""
from __future__ import annotations

import random
import select
import threading
import time
from collections.abc import Callable, Hashable

from ..common.wake_pipe import WakePipe as WakePipe, drain as drain


class PolledWatch:
    """``Watch`` by ``read()`` polled every ``poll_interval`` seconds (with jitter): a
    marker that changes whenever another connection may have committed, None when it
    cannot be read. A change seen may be spurious; a commit is never missed. A push
    signal comes in through ``_pushed`` and ``_fds`` (see ``postgres/watch.py``)."""

    def __init__(self, read: Callable[[], Hashable | None], poll_interval: float):
        self._read = read
        self._poll = poll_interval
        self._woken = threading.Event()
        self._pipe = WakePipe()
        self._seen = read()  # None: the first poll that reads one reports a change
        self._next_poll = time.monotonic() + self._jittered()

    def _jittered(self) -> float:
        return self._poll * random.uniform(0.8, 1.2)

    def _polled(self) -> bool:
        """True when the marker moved since the last look, or cannot be read: "nothing
        changed" would let a reader (the monitor) pass off its last read as live while
        the server is down; told to look, it meets the error and says so."""
        self._next_poll = time.monotonic() + self._jittered()
        marker = self._read()
        if marker is None:
            return True
        if marker != self._seen:
            self._seen = marker
            self._moved()
            return True
        return False

    def _moved(self) -> None:
        """The poll saw a change."""

    def _pushed(self) -> bool:
        """Whether the push signal says look (read what arrived); none here."""
        return False

    def _fds(self) -> list[int]:
        """What else the wait's ``select`` watches (the push signal's socket)."""
        return []

    def _sleep(self, now: float, sleep: float) -> float:
        """How long the wait may sleep at most (a push signal's reconnect may be due)."""
        return sleep

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            if self._woken.is_set():
                self._woken.clear()
                self._pipe.drain()
                return True
            if self._pushed():
                return True
            now = time.monotonic()
            if now >= self._next_poll and self._polled():
                return True
            left = deadline - now
            if left <= 0:
                return False
            sleep = self._sleep(now, min(left, max(0.0, self._next_poll - now)))
            try:
                select.select([self._pipe.fd, *self._fds()], [], [], sleep)
            except (OSError, ValueError):
                time.sleep(min(sleep, 0.05))

    def wake(self) -> None:
        self._woken.set()
        self._pipe.wake()

    def close(self) -> None:
        self._pipe.close()
