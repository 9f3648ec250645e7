"""Maintenance services: each is a class with ``run_once()`` and its own schedule (an
interval and the time it is next due), run by whoever hosts it:

* ``reaper.py`` — ``Reaper``: returns jobs whose lease expired to the queue (or to dead);
  every worker hosts one on its heartbeat thread.
* ``scheduler.py`` — ``Scheduler``: enqueues the periodic schedules' jobs, one per tick
  across all workers; a worker with schedules runs it on a thread of its own, waking at
  each tick.
"""
from .reaper import Reaper
from .scheduler import Scheduler

__all__ = ["Reaper", "Scheduler"]
