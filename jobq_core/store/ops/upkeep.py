"""What maintenance needs of a store, written once for every store: jobq's settings (kept
in ``jobq_meta``), the maintenance leader's lease, the schema version installed, and the
database's own upkeep (its reads and statements are the dialect's: ``health``, ``tidy``).

The leader is a lease row (``jobq_leader``), on PostgreSQL as on SQLite, as River's
``river_leader`` and Oban's ``oban_peers`` are: a lease runs out when its holder dies *or
freezes*, and it works through PgBouncer's transaction mode. A session advisory lock
would do neither (a stopped process keeps its connection, and so its lock, for ever).
Leadership saves work, it is not what keeps jobs safe: two leaders for a moment (a clock
step) would only both reap, prune and tick, which are fenced or idempotent.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from ...common.db_health import DbHealth

from ..dbapi import C, count
from ._base import Operations

INVARIANTS = {  # what each count finds must not exist (``Upkeep.invariants_broken``)
    "running jobs without a token or lease":
        "SELECT count(*) FROM jobq_jobs WHERE status='running' "
        "AND (token IS NULL OR lease_until IS NULL)",
    "finished jobs without finished_at":
        "SELECT count(*) FROM jobq_jobs WHERE status IN ('succeeded','dead','cancelled') "
        "AND finished_at IS NULL",
    "pending jobs holding a token":
        "SELECT count(*) FROM jobq_jobs WHERE status='pending' AND token IS NOT NULL",
}


class Upkeep(Operations[C]):
    def invariants_broken(self) -> list[str]:
        """What breaks jobq's invariants in the rows (``INVARIANTS``), read in one snapshot:
        "N running jobs without a token or lease", ...; [] when nothing does."""
        def op(c: C, _again: bool) -> list[str]:
            with self.backend.snapshot(c):
                return [f"{n} {what}" for what, q in INVARIANTS.items()
                        if (n := count(c.execute(q)))]

        return self.backend.run(op)

    def schema_installed(self) -> int:
        meta = self.settings_read()
        version = meta.get("schema_version", "")
        return int(version) if version.isdigit() else 0

    def schema_newest(self) -> int:
        return self.dialect.newest_schema

    def settings_read(self) -> dict[str, str]:
        rows = self.backend.run(lambda c, _again: c.execute(self.statements.META).fetchall())
        return {str(k): str(v) for k, v in rows}

    def settings_write(self, values: Mapping[str, str | None]) -> None:
        def op(c: C, _again: bool) -> None:
            with self.backend.transaction(c):
                for key, value in values.items():
                    if value is None:
                        c.execute(self.statements.META_DROP, (key,))
                    else:
                        c.execute(self.statements.META_PUT, (key, value))

        self.backend.run(op)

    def leader_elect(self, name: str, worker: str, now: float, expires: float) -> bool:
        return self.backend.run(lambda c, _again: c.execute(
            self.statements.LEADER_ELECT, (name, worker, now, expires, now)).rowcount == 1)

    def leader_resign(self, name: str, worker: str) -> bool:
        return self.backend.run(lambda c, _again: c.execute(
            self.statements.LEADER_RESIGN, (name, worker)).rowcount == 1)

    def leader_get(self, name: str) -> tuple[str, float, float] | None:
        row = self.backend.run(lambda c, _again: c.execute(
            self.statements.LEADER, (name,)).fetchone())
        if row is None:
            return None
        return str(row[0]), float(row[1]), float(row[2])

    def db_health(self) -> DbHealth:
        return self.backend.run(lambda c, _again: self.dialect.health(c))

    def db_tidy(self, table: str | None = None) -> bool:
        if table is not None and not re.fullmatch(r"jobq_[a-z_]{1,40}", table):
            raise ValueError(f"not one of jobq's tables: {table!r:.60}")
        return self.backend.run(lambda c, _again: self.dialect.tidy(c, table))
