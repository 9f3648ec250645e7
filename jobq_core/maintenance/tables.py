"""Keeping jobq's own tables healthy: the maintenance leader looks at them every
``interval`` seconds (15 by default) and steps in where the database did not.

PostgreSQL: a table whose dead rows passed the bounds (``common.db_health``: 10,000 and
20 % of its live rows) gets a ``VACUUM (ANALYZE)`` at once where autovacuum is off for it,
or where no vacuum has ever visited it (a new table filling fast: at 2,000 jobs/s a minute
without a vacuum or statistics left the Worker a backlog of 25,952 jobs). Otherwise
autovacuum gets a minute (its default nap) to come first: the leader steps in when the
table stayed past the bounds that long and autovacuum has not visited it within the last
minute (held back, or too busy elsewhere). It never vacuums when this
leader vacuumed it since the oldest open
transaction began (that transaction holds back what a vacuum may remove: another one
would read the table for nothing). Where the role may not vacuum a table (neither its
owner nor the database's), the leader says so once and carries on: the warnings in
``jobq stats``, the metrics and the monitor remain.

SQLite: a WAL past ``WAL_BYTES`` (64 MiB) is checkpointed and truncated. A reader holding
an older snapshot prevents it; the leader tries again at its next look, and the warnings
say the WAL starves meanwhile.
"""
from __future__ import annotations

import logging
import time

from ..common.checks import check_seconds
from ..common.db_health import RECENT_AUTOVACUUM, DbHealth, TableHealth
from ..errors import JobqError
from ..queue import Queue

log = logging.getLogger("jobq.maintenance")


class TableCare:
    def __init__(self, queue: Queue, *, interval: float = 15.0):
        check_seconds("table care interval", interval, positive=True)
        self.queue = queue
        self.interval = float(interval)
        self._due = 0.0
        self._vacuumed: dict[str, float] = {}  # table -> monotonic time of our last VACUUM
        self._past: dict[str, float] = {}  # table -> monotonic time first seen past the bound
        self._refused: set[str] = set()  # tables we were not allowed to vacuum (said once)
        self._starved = False  # the last checkpoint was held back (said once until it works)

    def run_once(self) -> list[str]:
        """Look, and vacuum (or checkpoint) what needs it; what was done ("jobq_jobs",
        "wal"). Never raises: the next look tries again."""
        done: list[str] = []
        try:
            health = self.queue.db_health()
            if health.store == "sqlite":
                done = self._checkpoint(health)
            else:
                for name, table in health.tables.items():
                    if self._should_vacuum(name, table, health):
                        started = time.monotonic()
                        self.queue.db_tidy(name)
                        self._vacuumed[name] = started
                        log.info("vacuumed %s: %d dead rows (%.2fs)", name, table.dead_rows,
                                 time.monotonic() - started)
                        done.append(name)
        except JobqError as e:
            log.warning("table care: %s (will retry)", e)
        except Exception:  # a bug: log it, and try again next time
            log.exception("table care failed unexpectedly (will retry)")
        self._due = time.monotonic() + self.interval
        return done

    def run_if_due(self) -> list[str]:
        if time.monotonic() < self._due:
            return []
        return self.run_once()

    def _should_vacuum(self, name: str, table: TableHealth, health: DbHealth) -> bool:
        if not table.vacuum_due():
            self._past.pop(name, None)
            return False
        past_for = time.monotonic() - self._past.setdefault(name, time.monotonic())
        if not table.can_vacuum:
            if name not in self._refused:
                self._refused.add(name)
                log.warning("%s has %d dead rows, but this role may not VACUUM it (only its "
                            "owner, the database's owner or a superuser may): run VACUUM "
                            "(ANALYZE) %s as one of them, or let autovacuum", name,
                            table.dead_rows, name)
            return False
        visited = table.last_autovacuum is not None or table.last_vacuum is not None
        if table.autovacuum and visited and past_for < RECENT_AUTOVACUUM:
            return False  # autovacuum's turn first, where it has come before
        if (table.last_autovacuum is not None
                and health.read_at - table.last_autovacuum < RECENT_AUTOVACUUM):
            return False
        ours = self._vacuumed.get(name)
        if (ours is not None and health.oldest_transaction is not None
                and time.monotonic() - ours < health.oldest_transaction):
            return False  # held back since our last vacuum: another would remove nothing
        return True

    def _checkpoint(self, health: DbHealth) -> list[str]:
        if not health.wal_starved():
            self._starved = False
            return []
        if self.queue.db_tidy():
            log.info("checkpointed the WAL (%d MiB) and truncated it",
                     (health.wal_bytes or 0) >> 20)
            self._starved = False
            return ["wal"]
        if not self._starved:
            self._starved = True
            log.warning("the WAL is %d MiB and cannot be checkpointed: a reader holds an "
                        "older snapshot (a long transaction or an open cursor); it shrinks "
                        "once that reader ends", (health.wal_bytes or 0) >> 20)
        return []
