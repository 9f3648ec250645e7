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
      ops/upkeep.py            settings, the maintenance leader, the schema's version
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..clock import Clock
from ..errors import UnusableConnection
from ..types import Deps, NewJob, Watch
from .backend import Backend
from .base import Completion, ConnectionIdentity, EndWatch
from .controls import ControlCache
from .dbapi import C
from .ops.admin import Admin
from .ops.copy_pages import Copying
from .ops.dependencies import Dependents
from .ops.reads import Reads
from .ops.worker_records import Registry
from .ops.running import Running
from .ops.upkeep import Upkeep


class Engine(Running[C], Dependents[C], Admin[C], Copying[C], Reads[C], Registry[C],
             Upkeep[C]):
    """Every job operation of ``store.base.Store``, on ``backend`` (``C``: its connection
    type, see ``store.dbapi``)."""

    def __init__(self, backend: Backend[C]):
        self.backend = backend
        self.dialect = backend.dialect
        self.statements = self.dialect.statements
        self._controls = ControlCache()

    @property
    def frozen(self) -> bool:
        return self.backend.frozen

    # -- on the application's connection (the backend's app_connection.py) --------------

    def job_insert_many_on(self, conn: object, jobs: Sequence[NewJob], now: float,
                           deps: Sequence[Deps | None] | None = None) -> list[int]:
        self._check_connection(conn)
        app = self.backend.app
        if deps is None or not any(deps):
            return app.insert_many(conn, jobs, now)
        # The jobs and their links, as job_insert_many writes them, in the caller's
        # transaction, and the wake-up of their queues sent when it commits. A job waited
        # on that does not exist is refused first: an error after the first INSERT would
        # leave that row in a transaction the caller may still commit.
        def op(c: Any) -> list[int]:
            self._refuse_missing_targets(c, deps)
            return self._insert_with_deps(c, jobs, deps, now, wake=app.notify)

        return app.on_app(conn, op)

    def job_complete_on(self, conn: object, completion: Completion, now: float) -> bool:
        """On the application's connection, in its transaction: the completion and the
        settling of the job's dependents commit (or roll back) with the caller's writes."""
        self._check_connection(conn)
        return self.backend.app.complete(conn, completion, now)

    def _check_connection(self, conn: object) -> None:
        """Before any write on the caller's connection (no lock of this store's: the
        connection is the caller's, and so is its thread): it must reach this store's
        database and be able to take jobq's write (``app.identity``)."""
        self.backend.check()  # open: the connection must find the tables made on first use
        identity = self.backend.app.identity(conn)
        if not self.backend.same_database(identity):
            raise UnusableConnection(
                f"the connection given with conn= is to {identity.where}, not to this queue's "
                f"database {self.backend.where}{self.backend.mismatch(identity)}; nothing was "
                "written")

    def same_database(self, identity: ConnectionIdentity) -> bool:
        return self.backend.same_database(identity)

    def location(self) -> str:
        return self.backend.location

    # -- the backend's own --------------------------------------------------------------------

    def server_clock(self) -> Clock | None:
        return self.backend.server_clock()

    def describe(self) -> dict[str, str | None]:
        return self.backend.describe()

    def watch(self, **options: Any) -> Watch:
        return self.backend.watch(**options)

    def watch_ends(self) -> EndWatch:
        return self.backend.watch_ends()

    def write_blockers(self) -> list[str]:
        return self.backend.write_blockers()

    def check(self) -> None:
        self.backend.check()

    def close(self) -> None:
        self.backend.close()
