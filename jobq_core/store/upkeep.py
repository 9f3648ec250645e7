"""The part of the ``Store`` contract that maintenance uses (``store/ops/upkeep.py``,
``store/ops/admin.py``'s batches): settings, the leader's lease, the schema's version."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol


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
