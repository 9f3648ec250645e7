"""The health of jobq's own tables, as one read finds it (``Queue.db_health``), and the
bounds that decide when the maintenance leader steps in and when operators are warned:
one rule, read by the leader's duty (``maintenance/tables.py``), ``jobq stats``, the
metrics and the monitor's header alike.

PostgreSQL. Every claim and completion leaves dead row versions in ``jobq_jobs`` (two a
job at least: the claim's update and the completion's), which only VACUUM makes room of.
jobq's tables ask autovacuum to visit after 1 % of their rows changed; that does nothing
when autovacuum is off, or when a transaction left open holds back what any vacuum may
remove. In a run at 2,000 jobs/s on a server with autovacuum off, a worker kept pace for
35 s, then fell to 518-959 jobs/s as dead rows reached 150,000-250,000; with a
``VACUUM (ANALYZE)`` every 15 s it held 2,000 jobs/s at a p99 of 12 ms (issue 36).

* ``DEAD_ROWS`` (10,000): about 2.5 s of dead versions at 2,000 jobs/s, an order of
  magnitude below where that run slowed, and enough that a VACUUM's fixed cost (it reads
  every index of the table whole) is spent on something.
* ``DEAD_SHARE`` (20 %): PostgreSQL's own default ``autovacuum_vacuum_scale_factor``: a
  table that keeps a long retention (millions of finished rows) is not read whole every
  15 s for a few thousand dead rows; the hot rows' index entries are what slows claims,
  and the claim's partial indexes hold only pending jobs.
* ``HELD_BACK`` (5 minutes): an open transaction older than this keeps every row version
  that died since it began; jobq's own transactions last milliseconds, a report's or a
  migration's may last minutes, one left idle in a transaction lasts for ever.

SQLite. Its WAL grows while a reader holds an old snapshot (no checkpoint can copy pages
past what that reader sees), and the file keeps its size afterwards: ``WAL_BYTES``
(64 MiB, 16 times the 4 MiB jobq's connections checkpoint at) says it starved.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .time_text import duration

DEAD_ROWS = 10_000
DEAD_SHARE = 0.2
HELD_BACK = 300.0  # seconds
RECENT_AUTOVACUUM = 60.0  # seconds: autovacuum visited this recently, leave the table to it
WAL_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class TableHealth:
    """One PostgreSQL table, from ``pg_stat_user_tables`` (estimates the server keeps).
    Times are seconds since the epoch (None: never since the statistics were reset)."""

    dead_rows: int
    live_rows: int
    last_vacuum: float | None
    last_autovacuum: float | None
    autovacuum: bool  # autovacuum on for the server and not switched off for this table
    can_vacuum: bool  # this session's role may VACUUM it (its owner's member, or superuser)

    def vacuum_due(self) -> bool:
        """Its dead rows past both bounds (``DEAD_ROWS`` and ``DEAD_SHARE`` of live)."""
        return self.dead_rows >= DEAD_ROWS and self.dead_rows >= DEAD_SHARE * self.live_rows


@dataclass(frozen=True, slots=True)
class DbHealth:
    """What one read of the database's upkeep found. ``store``: "postgresql" or "sqlite";
    the other store's fields stay at their defaults."""

    store: str
    read_at: float  # the database's clock, seconds since the epoch
    # PostgreSQL
    tables: Mapping[str, TableHealth] = field(default_factory=dict)
    oldest_transaction: float | None = None  # seconds; None: none open (but ours)
    autovacuum: bool | None = None  # the server's ``autovacuum`` setting
    # SQLite
    wal_bytes: int | None = None
    free_pages: int | None = None
    page_count: int | None = None
    page_size: int | None = None

    def dead_rows(self) -> dict[str, int]:
        return {name: t.dead_rows for name, t in self.tables.items()}

    def held_back(self) -> bool:
        return self.oldest_transaction is not None and self.oldest_transaction >= HELD_BACK

    def bloated(self) -> list[str]:
        """The tables whose dead rows passed the bounds, most dead rows first."""
        return sorted((n for n, t in self.tables.items() if t.vacuum_due()),
                      key=lambda n: -self.tables[n].dead_rows)

    def wal_starved(self) -> bool:
        return self.wal_bytes is not None and self.wal_bytes >= WAL_BYTES

    def warnings(self) -> list[str]:
        """What an operator should look at, most severe first, each one short line (the
        monitor's header puts them after its own)."""
        out: list[str] = []
        if self.held_back():
            assert self.oldest_transaction is not None
            out.append(f"vacuum held back: a transaction open {duration(self.oldest_transaction)}")
        bloated = self.bloated()
        if bloated:
            t = self.tables[bloated[0]]
            out.append(f"{t.dead_rows:,} dead rows in {bloated[0]}"
                       + (f" (+{len(bloated) - 1} tables)" if len(bloated) > 1 else ""))
        if self.wal_starved():
            assert self.wal_bytes is not None
            out.append(f"WAL {self.wal_bytes / 1048576:.0f} MiB: a long reader holds "
                       "back checkpoints")
        return out

