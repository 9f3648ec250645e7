"""Retention: the maintenance leader deletes finished jobs older than their status's
retention term (``Queue.retention``), every ``interval`` seconds.

Deletion goes in batches of ``batch`` jobs, one short transaction each, and after each
batch the pruner waits as long as the batch took: it holds SQLite's write lock (or
PostgreSQL's row locks) at most half of the time, a few milliseconds at a stretch, so
claims and completions never queue behind it, however many millions of rows are due.
A job that a waiting job depends on is kept until that job no longer waits
(``store.sql._PRUNABLE``), and so is the newest job (ids are never reused).
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..common.checks import check_int, check_seconds
from ..errors import JobqError
from ..queue import Queue

log = logging.getLogger("jobq.maintenance")
BATCH = 200  # jobs a transaction: about 5 ms of SQLite's write lock (docs/performance.md)


class Pruner:
    def __init__(self, queue: Queue, *, interval: float = 60.0, batch: int = BATCH,
                 stop: threading.Event | None = None,
                 leading: Callable[[], bool] = lambda: True):
        check_seconds("retention interval", interval, positive=True)
        check_int("retention batch", batch, minimum=1)
        self.queue = queue
        self.interval = float(interval)
        self.batch = batch
        self._stop = stop or threading.Event()
        self._leading = leading
        self._due = 0.0

    def run_once(self) -> dict[str, int]:
        """Delete every job past its term, a batch at a time; how many of each status.
        Stops early (the next pass goes on) when its owner stops or no longer leads.
        Never raises."""
        deleted: dict[str, int] = {}
        try:
            terms = self.queue.retention().terms()
            for status, term in terms.items():
                if term is None:
                    continue
                while not self._stop.is_set() and self._leading():
                    started = time.monotonic()
                    n = self.queue.prune_batch({status: term}, self.batch).get(status, 0)
                    if n:
                        deleted[status] = deleted.get(status, 0) + n
                    if n < self.batch:
                        break
                    self._stop.wait(time.monotonic() - started)  # half the time, at most
        except JobqError as e:
            log.warning("retention: %s (will retry)", e)
        except Exception:  # a bug: log it, and try again next time
            log.exception("retention failed unexpectedly (will retry)")
        if deleted:
            log.info("retention: deleted %s", ", ".join(
                f"{n} {status}" for status, n in sorted(deleted.items())))
        self._due = time.monotonic() + self.interval
        return deleted

    def run_if_due(self) -> dict[str, int]:
        if time.monotonic() < self._due:
            return {}
        return self.run_once()
