"""``Queue``'s verbs for keeping a database healthy for years: retention by status, the
maintenance leader, and the schema's version (a part of ``Queue``, one of its bases: it
uses only what it declares below).

Retention lives in the database (``jobq_meta``), so every worker, whichever version of the
application it runs, applies the same terms: the maintenance leader deletes what is older
(``maintenance/retention.py``). The defaults keep a week of succeeded and cancelled jobs
and a month of dead ones: long enough to look into last week's incident and to retry a
dead job after a long weekend, short enough that a busy queue's table does not grow
without bound (River's defaults are a day, a day and a week; Oban's pruner keeps a
minute; pg-boss archives after a week).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import EllipsisType

from ..clock import Clock
from ..common.checks import MAX_SECONDS, check_name, check_seconds
from ..common.db_health import DbHealth
from ..store.base import Store
from ..types import JobStatus

DAY = 86400.0
DEFAULT_RETENTION = {JobStatus.SUCCEEDED: 7 * DAY, JobStatus.CANCELLED: 7 * DAY,
                     JobStatus.DEAD: 30 * DAY}
FOREVER = "forever"
_KEY = "retention."
LEADER_ROLE = "maintenance"


@dataclass(frozen=True, slots=True)
class Retention:
    """How long finished jobs are kept, by status, in seconds (None: for ever), and which
    of the three were set (the others are at their default)."""

    succeeded: float | None
    cancelled: float | None
    dead: float | None
    set: tuple[str, ...] = ()

    def terms(self) -> dict[str, float | None]:
        return {JobStatus.SUCCEEDED: self.succeeded, JobStatus.CANCELLED: self.cancelled,
                JobStatus.DEAD: self.dead}


@dataclass(frozen=True, slots=True)
class Leader:
    """The worker that runs maintenance (the reaper, retention, the periodic schedules)
    for the whole database, and until when its lease holds unless it renews it."""

    worker: str
    elected_at: float
    expires_at: float


class Upkeep:
    store: Store
    clock: Clock

    # -- retention ------------------------------------------------------------------------

    def retention(self) -> Retention:
        """The retention terms in force (the database's, else the defaults)."""
        meta = self.store.settings_read()
        values: dict[str, float | None] = {}
        for status, default in DEFAULT_RETENTION.items():
            text = meta.get(_KEY + status)
            values[status] = default if text is None else _term(text, default)
        chosen = tuple(s for s in DEFAULT_RETENTION if _KEY + s in meta)
        return Retention(values[JobStatus.SUCCEEDED], values[JobStatus.CANCELLED],
                         values[JobStatus.DEAD], chosen)

    def set_retention(self, *, succeeded: float | None | EllipsisType = ...,
                      cancelled: float | None | EllipsisType = ...,
                      dead: float | None | EllipsisType = ...) -> Retention:
        """Keep finished jobs of each status this many seconds after they finished (None:
        for ever; left out: unchanged), for every worker of this database; returns the
        terms now in force. The maintenance leader deletes older ones within a minute,
        in small batches, keeping any job that a waiting job depends on."""
        values: dict[str, str | None] = {}
        for status, term in ((JobStatus.SUCCEEDED, succeeded),
                             (JobStatus.CANCELLED, cancelled), (JobStatus.DEAD, dead)):
            if term is ...:
                continue
            if term is not None:
                check_seconds(f"retention of {status} jobs", term, maximum=MAX_SECONDS)
            values[_KEY + status] = FOREVER if term is None else repr(float(term))
        if values:
            self.store.settings_write(values)
        return self.retention()

    def prune_batch(self, statuses: dict[str, float], limit: int) -> dict[str, int]:
        """Delete at most ``limit`` finished jobs of one status older than its term
        (``statuses``: status -> seconds) in one transaction per status; how many of each.
        What retention does a batch at a time."""
        now = self.clock.now()
        done: dict[str, int] = {}
        for status, term in statuses.items():
            done.update(self.store.job_prune_batch(now - term, [status], limit))
        return done

    # -- the maintenance leader -----------------------------------------------------------

    def elect(self, worker_id: str, term: float) -> bool:
        """Take or renew the maintenance leader's lease for ``worker_id`` for ``term``
        seconds; whether it leads now. Workers do this on every heartbeat."""
        check_name("worker id", worker_id)
        check_seconds("leader term", term, positive=True)
        now = self.clock.now()
        return self.store.leader_elect(LEADER_ROLE, worker_id, now, now + term)

    def resign(self, worker_id: str) -> bool:
        """Give the leader's role up at once (a worker stopping does): another worker
        takes it at its next heartbeat. Whether ``worker_id`` led."""
        return self.store.leader_resign(LEADER_ROLE, worker_id)

    def leader(self) -> Leader | None:
        """The maintenance leader, if a worker holds the role (its lease may have run out:
        compare ``expires_at`` with ``clock.now()``)."""
        row = self.store.leader_get(LEADER_ROLE)
        return None if row is None else Leader(*row)

    # -- the database's own upkeep ---------------------------------------------------------

    def db_health(self) -> DbHealth:
        """What the database says of jobq's tables: dead rows, vacuums and the oldest open
        transaction on PostgreSQL, the WAL and free pages on SQLite (``warnings()`` says
        what needs looking at). Read-only; the maintenance leader acts on it."""
        return self.store.db_health()

    def db_tidy(self, table: str | None = None) -> bool:
        """``VACUUM (ANALYZE)`` jobq's ``table`` (PostgreSQL), or checkpoint and truncate
        the WAL (SQLite); what the maintenance leader runs when the bounds are passed.
        False when the database could not do it now."""
        return self.store.db_tidy(table)

    # -- the schema -----------------------------------------------------------------------

    def schema_version(self) -> tuple[int, int]:
        """(the schema version the database has now, the one this jobq writes): a read of
        the database, so it also says that the database answers."""
        return self.store.schema_installed(), self.store.schema_newest()


def _term(text: str, default: float) -> float | None:
    """A stored term; a value jobq did not write keeps the default (and deletes nothing
    sooner than it would)."""
    if text == FOREVER:
        return None
    try:
        value = float(text)
    except ValueError:
        return default
    return value if value >= 0 else default
