"""The part of the ``Store`` contract that maintenance uses (``store/ops/upkeep.py``,
``store/ops/admin.py``'s batches): settings, the leader's lease, the schema's version, and
the database's own upkeep (dead rows, vacuum, the WAL)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from ..common.db_health import DbHealth


class UpkeepStore(Protocol):
    def job_prune_batch(self, finished_before: float, statuses: Sequence[str],
                        limit: int) -> dict[str, int]:
        """One batch of ``job_prune``, in one transaction: at most ``limit`` jobs deleted,
        how many of each status. ``job_prune``'s rules hold (never the newest job, never
        one a waiting job depends on)."""
        ...

    def schema_installed(self) -> int:
        """The schema version ``jobq_meta`` records now (0: none); reads the database."""
        ...

    def schema_newest(self) -> int:
        """The schema version this jobq writes."""
        ...

    def settings_read(self) -> dict[str, str]:
        """Every row of ``jobq_meta`` (the schema's marks, and settings such as retention)."""
        ...

    def settings_write(self, values: Mapping[str, str | None]) -> None:
        """Set these ``jobq_meta`` keys (None: delete the key), in one transaction."""
        ...

    def leader_elect(self, name: str, worker: str, now: float, expires: float) -> bool:
        """Take the lease of role ``name`` for ``worker`` until ``expires``, or renew it:
        True when ``worker`` holds it now, False when another holds a lease not run out
        at ``now``."""
        ...

    def leader_resign(self, name: str, worker: str) -> bool:
        """Give the role up at once (only if ``worker`` holds it): another takes it at its
        next try instead of after the lease."""
        ...

    def leader_get(self, name: str) -> tuple[str, float, float] | None:
        """The role's holder: (worker, elected at, lease expires at), or None."""
        ...

    def db_health(self) -> DbHealth:
        """One read of what the database says of jobq's tables: on PostgreSQL each table's
        dead and live rows, its last vacuum and autovacuum, whether autovacuum is on for it
        and whether this role may VACUUM it, and the age of the oldest open transaction of
        another session; on SQLite the WAL file's size and the free pages. Read-only."""
        ...

    def db_tidy(self, table: str | None = None) -> bool:
        """PostgreSQL: ``VACUUM (ANALYZE)`` jobq's table ``table`` (skipped, True all the
        same, while another vacuum holds it). SQLite (``table`` None): checkpoint the WAL
        and truncate it; False when a reader holds an older snapshot. Never inside a
        transaction; a table that is not jobq's: ``ValueError``."""
        ...
