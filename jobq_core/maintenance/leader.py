"""The maintenance leader: one worker per database runs the reaper, retention and the
periodic schedules' ticks, instead of every worker at once.

Each worker's heartbeat calls ``Elector.run_once`` every beat: it renews the lease of the
role if it holds it, or takes it when the holder's lease ran out (``Queue.elect``, one
statement). A leader that dies or freezes stops renewing, and another worker takes over
at its first beat after the lease ran out: within a lease term and a beat. A worker that
stops gives the role up (``resign``), so the next one takes it at its next beat.

``leading`` is this process's view, and it errs on the side of not leading: it turns false
two thirds into a term after the last renewal that succeeded, before the lease can run
out in the database, so that a worker that cannot reach the database (and cannot renew)
stops its duties before another may start them. Duties that overlap for a moment anyway
(a clock stepped) are safe: every reap is fenced, ticks are taken once, deletes are
idempotent.
"""
from __future__ import annotations

import logging
import threading
import time

from ..common.checks import check_seconds
from ..errors import JobqError
from ..queue import Queue

log = logging.getLogger("jobq.maintenance")


class Elector:
    def __init__(self, queue: Queue, worker_id: str, *, term: float):
        check_seconds("leader term", term, positive=True)
        self.queue = queue
        self.worker_id = worker_id
        self.term = float(term)
        self._until = 0.0  # monotonic time until which this worker surely leads
        self._lock = threading.Lock()
        self._was = False

    @property
    def leading(self) -> bool:
        return time.monotonic() < self._until

    def run_once(self) -> bool:
        """Take or renew the role; whether this worker leads now. A database error counts
        as not leading (logged) and is tried again at the next beat."""
        started = time.monotonic()
        try:
            won = self.queue.elect(self.worker_id, self.term)
        except JobqError as e:
            log.warning("leader election: %s (will retry)", e)
            won = False
        with self._lock:
            self._until = started + self.term * 2 / 3 if won else 0.0
            if won != self._was:
                log.info("worker %s %s the maintenance leader", self.worker_id,
                         "is now" if won else "is no longer")
            self._was = won
        return won

    def resign(self) -> None:
        """Give the role up (when this worker stops); never raises."""
        with self._lock:
            self._until = 0.0
            self._was = False
        try:
            self.queue.resign(self.worker_id)
        except JobqError as e:
            log.warning("could not give up the maintenance leader's role: %s", e)
