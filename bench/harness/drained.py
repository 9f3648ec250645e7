"""Drained: which of a drain's n jobs have run, shared by its forked worker processes, for
the peers whose worker has no burst mode (Celery, Dramatiq, awa, chancy, Oban): their
drains end when every job has run once, and the harness stops their workers after that."""
from __future__ import annotations

import ctypes
import multiprocessing as mp
import time

STALL_S = 10.0                      # a drain with no job finished for this long gives up


class Drained:
    """Made in the parent before the drain's workers fork; each worker's handlers call
    ``ran(i)``, and a worker's stopper waits on ``wait()``."""

    def __init__(self, n: int):
        ctx = mp.get_context("fork")
        self.n = n
        self.seen = ctx.RawArray(ctypes.c_ubyte, max(n, 1))
        self.count = ctx.RawValue(ctypes.c_long, 0)
        self.at = ctx.RawValue(ctypes.c_double, 0.0)   # time.monotonic() of the last first run
        self.lock = ctx.Lock()
        self.done = ctx.Event()

    def ran(self, i: int) -> None:
        with self.lock:
            if 0 <= i < self.n and not self.seen[i]:
                self.seen[i] = 1
                self.count.value += 1
                if self.count.value == self.n:
                    self.at.value = time.monotonic()
                    self.done.set()

    def wait(self) -> bool:
        """Until every job has run (True) or none has run for STALL_S (False)."""
        last, since = -1, time.monotonic()
        while not self.done.wait(0.2):
            c = self.count.value
            if c != last:
                last, since = c, time.monotonic()
            elif time.monotonic() - since > STALL_S:
                return False
        return True
