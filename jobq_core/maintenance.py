"""Background services: the reaper. Each is a ``run_once()`` plus a thin loop.

Every worker runs the reaper (once at start, then at least once per lease term), so no
separate process is needed; several reapers on one database are safe, as a reap only moves
jobs whose lease has run out, in short transactions.
"""
from __future__ import annotations

import logging

from .checks import check_seconds
from .errors import JobqError
from .queue import Queue

log = logging.getLogger("jobq.maintenance")


class Reaper:
    """Returns running jobs whose lease ran out to pending (after backoff) or to dead."""

    def __init__(self, queue: Queue, *, interval: float = 30.0):
        check_seconds("reaper interval", interval, positive=True)
        self.queue = queue
        self.interval = float(interval)

    def run_once(self) -> int:
        """Reap now; returns how many jobs were moved. Never raises a database error:
        the next run tries again, and nothing is lost in between."""
        try:
            n = self.queue.reap()
        except JobqError as e:
            log.warning("reaper: %s", e)
            return 0
        if n:
            log.info("reaper: %d job(s) with an expired lease returned to the queue", n)
        return n
