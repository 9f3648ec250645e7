"""The reaper: returns running jobs whose lease ran out to pending (after a backoff delay)
or to dead, through the store's ``job_reap_expired`` (``Queue.reap()``), and drops the
registry entries of workers silent past their forget time (``Queue.forget_silent_workers``).

The maintenance leader runs it (``duties.py``), so no separate process is needed: when it
is elected, then whenever ``interval`` has passed (``run_if_due``). Several reapers on one
database are safe all the same (two leaders for a moment, ``jobq reap`` by hand): a reap
only moves jobs whose lease has run out, each update fenced by the token it read, in short
transactions.
"""
from __future__ import annotations

import logging
import time

from ..common.checks import check_seconds
from ..errors import JobqError
from ..queue import Queue
from ..store.base import DEFAULT_MAX_LOST_ATTEMPTS

log = logging.getLogger("jobq.maintenance")


class Reaper:
    """Reaps ``queue`` every ``interval`` seconds, when its owner asks (``run_if_due``)."""

    def __init__(self, queue: Queue, *, interval: float = 30.0,
                 max_lost_attempts: int = DEFAULT_MAX_LOST_ATTEMPTS):
        check_seconds("reaper interval", interval, positive=True)
        self.queue = queue
        self.max_lost_attempts = max_lost_attempts
        self.interval = float(interval)
        self._due = 0.0  # monotonic time of the next scheduled reap: the first is due at once

    def run_once(self) -> int:
        """Reap now; returns how many jobs were moved, and schedules the next reap
        ``interval`` from now. Never raises: the next run tries again, and nothing is
        lost in between."""
        try:
            n = self.queue.reap(max_lost_attempts=self.max_lost_attempts)
            forgot = self.queue.forget_silent_workers()
        except JobqError as e:
            log.warning("reaper: %s", e)
            n = 0
        except Exception:  # a bug: log it, and reap again next time
            log.exception("reaper failed unexpectedly (will retry)")
            n = 0
        else:
            if n:
                log.info("reaper: %d job(s) with an expired lease returned to the queue", n)
            if forgot:
                log.info("reaper: forgot %d worker(s) silent past their forget time", forgot)
        self._due = time.monotonic() + self.interval
        return n

    def run_if_due(self) -> int:
        """Reap if ``interval`` has passed since the last reap; returns how many jobs were
        moved (0 when it was not due)."""
        if time.monotonic() < self._due:
            return 0
        return self.run_once()
