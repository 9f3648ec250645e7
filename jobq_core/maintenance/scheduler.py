"""The scheduler: enqueues the jobs of periodic schedules (``registry.periodic``), one per
tick, however many workers run it.

Every worker whose registry has schedules runs one, on a thread of its own
(``jobq-scheduler``): ticks need second precision, finer than the heartbeat's. The
maintenance leader ticks on time; a worker that does not lead acts ``FALLBACK`` seconds
late, and so finds each tick the leader declares already taken: it enqueues only the
ticks of schedules the leader's registry does not declare (workers of different
applications on one database), or all of them while no worker leads. Each
``run_once`` reads the schedules' rows (one small query), and for each schedule whose
latest tick at or before now is newer than the one recorded, asks the store to record
that tick and enqueue its job in one transaction (``Queue.enqueue_tick``): the first
worker to do so wins, the others find the tick taken. Between ticks the thread sleeps
until the next one is due, so an idle worker wakes once per tick of its most frequent
schedule, no more.

Only the latest tick is ever enqueued: after downtime (or a pause longer than a period)
the ticks missed are skipped, logged, and the most recent one enqueued once.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from ..common.time_text import timestamp
from ..errors import JobqError
from ..queue import Queue
from ..schedule import Schedule

log = logging.getLogger("jobq.maintenance")

_LATE = 0.002  # wake this long after a tick: its time has surely passed by every clock
_RETRY = 1.0  # seconds before trying again after a database error
FALLBACK = 5.0  # seconds a worker that does not lead waits after a tick before taking it


class Scheduler:
    def __init__(self, queue: Queue, schedules: Sequence[Schedule],
                 leading: Callable[[], bool] = lambda: True, fallback: float = FALLBACK):
        self.queue = queue
        self.schedules = list(schedules)
        self._leading = leading
        self.fallback = fallback
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="jobq-scheduler", daemon=True)

    def run_once(self) -> float:
        """Enqueue every schedule's due tick not enqueued yet; returns how many seconds
        until the next tick of any schedule. Raises ``JobqError`` (nothing half-done: each
        tick is one transaction)."""
        lag = 0.0 if self._leading() else self.fallback
        real_now = self.queue.clock.now()
        now = real_now - lag
        recorded = {s.key: s for s in self.queue.schedules()}
        for schedule in self.schedules:
            due = schedule.latest_tick(now)
            row = recorded.get(schedule.key)
            if row is None:  # new: count from here (the next tick is its first)
                self.queue.register_schedule(schedule, since=due)
                continue
            last = row.last_tick
            if last is not None and last > schedule.next_tick(real_now):
                # Beyond the next tick to come: a clock that ran ahead (and was set back)
                # recorded it. Waiting for it would silence the schedule until then: go on
                # from now, counting from the tick before this one. (Judged by the clock as
                # it is, not as a worker that does not lead lags it: the leader's tick of a
                # second ago is not in the future.)
                before = schedule.latest_tick(schedule.latest_tick(real_now) - 1e-6)
                if self.queue.rewind_schedule(schedule, last, before):
                    log.warning("schedule %s: its recorded tick %s is in the future, beyond "
                                "its next one: a clock ran ahead; going on from now",
                                schedule.describe(), timestamp(last))
                last = before
            if last is not None and last >= due:
                continue
            job_id = self.queue.enqueue_tick(schedule, due)
            if job_id is None:
                continue  # another worker was first
            missed = schedule.ticks_between(last, due) if last is not None else 0
            if missed:
                log.warning("schedule %s: %s tick(s) missed while no worker ran were skipped; "
                            "enqueued only the latest (job %d, tick %s)",
                            schedule.describe(), missed if missed < 1000 else "1000+",
                            job_id, timestamp(due))
            else:
                log.debug("schedule %s: enqueued job %d for the tick of %s",
                          schedule.describe(), job_id, timestamp(due))
        now = self.queue.clock.now() - lag
        return max(0.0, min(s.next_tick(now) for s in self.schedules) - now) + _LATE

    def start(self) -> None:
        if self.schedules:
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        wait = 0.0
        while not self._stop.wait(wait):
            try:
                wait = self.run_once()
            except JobqError as e:
                log.warning("scheduler: %s (will retry)", e)
                wait = _RETRY
            except Exception:  # a bug: log it, and try again later
                log.exception("scheduler failed unexpectedly (will retry)")
                wait = _RETRY
