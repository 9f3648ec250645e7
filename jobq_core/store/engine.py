"""The engine: the ``Store`` contract over any backend.

Each job operation is written once, in ``store/ops/`` (its policy) and ``store/sql.py``
(its statements); a backend (``sqlite/``, ``postgres/``) brings connections,
transactions, errors, signals and the few statements that differ (its ``Dialect``).

    Engine(backend)            open_store() builds one from the database string
      ops/running.py           enqueue, claim, heartbeat, complete, fail, release, reap
      ops/dependencies.py      jobs that wait for others: waiting, released, cancelled
      ops/admin.py             retry, retry dead, cancel, prune
      ops/copying.py           a copy between stores: its source's pages, its destination's
      ops/reads.py             get, list, count, attempts, stats, throughput, dead groups
      ops/registry.py          workers, schedules, queue controls
"""
from __future__ import annotations

from collections.abc import Sequence

from ..clock import Clock
from ..types import Watch
from .backend import Backend
from .base import ConnectionIdentity, NewJob
from .controls import ControlCache
from .ops.admin import Admin
from .ops.copying import Copying
from .ops.dependencies import Dependents
from .ops.reads import Reads
from .ops.registry import Registry
from .ops.running import Running


class Engine(Running, Dependents, Admin, Copying, Reads, Registry):
    """Every job operation of ``store.base.Store``, on ``backend``."""

    def __init__(self, backend: Backend):
        self.backend = self.b = backend
        self.d = backend.dialect
        self.q = self.d.q
        self._controls = ControlCache()

    @property
    def frozen(self) -> bool:
        return self.b.frozen

    # -- on the application's connection (the backend's app_connection.py) --------------

    def job_insert_many_on(self, conn: object, jobs: Sequence[NewJob], now: float) -> list[int]:
        self.b.check_connection(conn)
        return self.b.insert_on(conn, jobs, now)

    def same_database(self, identity: ConnectionIdentity) -> bool:
        return self.b.same_database(identity)

    def location(self) -> str:
        return self.b.location

    # -- the backend's own --------------------------------------------------------------------

    def server_clock(self) -> Clock | None:
        return self.b.server_clock()

    def describe(self) -> dict[str, str | None]:
        return self.b.describe()

    def watch(self, **options) -> Watch:
        return self.b.watch(**options)

    def write_blockers(self) -> list[str]:
        return self.b.write_blockers()

    def check(self) -> None:
        self.b.check()

    def close(self) -> None:
        self.b.close()
