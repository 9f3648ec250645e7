"""Maintenance services: each is a class with ``run_once()`` and its own schedule (an
interval and the time it is next due), run by whoever hosts it:

* ``leader.py`` — ``Elector``: one worker per database leads maintenance, elected by a
  lease its heartbeat renews; another takes over within a lease term when it dies.
* ``duties.py`` — ``Duties``: the leader's thread (``jobq-maintenance``), running:
* ``reaper.py`` — ``Reaper``: returns jobs whose lease expired to the queue (or to dead);
* ``retention.py`` — ``Pruner``: deletes finished jobs past their retention, in batches;
* ``tables.py`` — ``TableCare``: vacuums jobq's tables where autovacuum did not
  (PostgreSQL), checkpoints a WAL a long reader let grow (SQLite).
* ``scheduler.py`` — ``Scheduler``: enqueues the periodic schedules' jobs, one per tick;
  the leader on time, a worker that does not lead only the ticks the leader left (its
  registry declares other schedules), a few seconds late.
"""
from .duties import Duties
from .leader import Elector
from .reaper import Reaper
from .retention import Pruner
from .scheduler import Scheduler
from .tables import TableCare

__all__ = ["Duties", "Elector", "Pruner", "Reaper", "Scheduler", "TableCare"]
