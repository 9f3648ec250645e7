"""Helpers for tests of code that uses jobq: a clock you move by hand."""
from __future__ import annotations

import threading


class FakeClock:
    """A clock that stands still until told to move. Thread-safe."""

    def __init__(self, start: float = 1_700_000_000.0):
        self._now = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> float:
        with self._lock:
            self._now += seconds
            return self._now

    def set(self, t: float) -> None:
        with self._lock:
            self._now = float(t)


def wait_for(condition, timeout: float = 10.0, interval: float = 0.01):
    """Call ``condition`` until it returns something truthy and return that; raise
    ``AssertionError`` after ``timeout`` seconds. For tests that wait on a worker: poll the
    database with a deadline instead of sleeping a fixed time."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)
