"""Periodic schedules: what ``registry.periodic(...)`` declares, and its tick arithmetic.

A schedule's ticks are the same for every worker, whatever its start time: ``every=N``
ticks at the multiples of N seconds since the Unix epoch; ``cron=`` at the times the
expression matches, in UTC or in ``tz``. Cron expressions are parsed and evaluated by
cronsim (a small, maintained, dependency-free library), never by hand.

Which worker enqueues a tick is decided by the database (``maintenance/scheduler.py``):
a schedule's latest tick is recorded in the same transaction as its job.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from .common.checks import check_int, check_name, check_seconds
from .types import NewJob, ScheduleInfo

_TINY = timedelta(microseconds=1)


@dataclass(frozen=True)
class Schedule:
    """One periodic job: ``kind`` with ``payload`` (JSON text) into ``queue`` every
    ``every`` seconds or at the times ``cron`` matches. Made by ``Registry.periodic``."""

    kind: str
    payload: str  # JSON text
    queue: str
    priority: int
    max_attempts: int | None
    every: float | None
    cron: str | None
    tz: str | None

    @property
    def key(self) -> str:
        """What identifies the schedule in the database, the same in every worker that
        declares it: its kind, spec and queue, and a digest of its payload and options."""
        spec = f"every {self.every:g}s" if self.every is not None else f"cron {self.cron}"
        if self.tz:
            spec += f" tz {self.tz}"
        digest = hashlib.sha256(
            f"{self.payload}\0{self.priority}\0{self.max_attempts}".encode()).hexdigest()[:10]
        return f"{self.kind} {spec} queue {self.queue} {digest}"

    def info(self, since: float, now: float) -> ScheduleInfo:
        """The schedule's record, as first registered at ``now``, counting ticks after
        ``since`` (no tick enqueued yet)."""
        return ScheduleInfo(self.key, self.kind, self.queue, self.every, self.cron, self.tz,
                            since, None, now)

    def tick_job(self, tick: float, default_attempts: int) -> NewJob:
        """The job for ``tick``: it runs at the tick, with the schedule's attempts or,
        when it sets none, ``default_attempts``."""
        return NewJob(self.kind, self.payload, self.queue, self.priority, float(tick),
                      self.max_attempts or default_attempts, None)

    def _zone(self) -> tzinfo:
        return ZoneInfo(self.tz) if self.tz else timezone.utc

    def _cron(self, start: datetime, reverse: bool = False) -> CronSim:
        """The cron ticks from ``start``: for a schedule without ``every`` (make_schedule
        gives a schedule exactly one of ``every`` and ``cron``)."""
        assert self.cron is not None
        return CronSim(self.cron, start, reverse=reverse)

    def latest_tick(self, now: float) -> float:
        """The latest tick at or before ``now``."""
        if self.every is not None:
            return math.floor(now / self.every) * self.every
        at = datetime.fromtimestamp(now, self._zone()) + _TINY
        return next(self._cron(at, reverse=True)).timestamp()

    def next_tick(self, now: float) -> float:
        """The first tick after ``now``."""
        if self.every is not None:
            return (math.floor(now / self.every) + 1) * self.every
        return next(self._cron(datetime.fromtimestamp(now, self._zone()))).timestamp()

    def ticks_between(self, after: float, before: float, cap: int = 1000) -> int:
        """How many ticks lie strictly between ``after`` and ``before`` (at most ``cap``)."""
        if before <= after:
            return 0
        if self.every is not None:
            n = math.ceil(before / self.every) - math.floor(after / self.every) - 1
            return max(0, min(cap, n))
        n = 0
        for at in self._cron(datetime.fromtimestamp(after, self._zone())):
            if at.timestamp() >= before or n >= cap:
                break
            n += 1
        return n

    @classmethod
    def from_info(cls, info: ScheduleInfo) -> Schedule | None:
        """The tick arithmetic of a schedule read from the database (for ``jobq schedules``
        and the monitor, which have no registry); None when its spec cannot be read
        (another program, or a newer jobq, wrote it)."""
        try:
            return make_schedule(info.kind, every=info.every, cron=info.cron, payload="null",
                                 queue=info.queue, priority=0, max_attempts=None, tz=info.tz)
        except (TypeError, ValueError):
            return None

    def describe(self) -> str:
        return f"{self.kind} ({'every %gs' % self.every if self.every else f'cron {self.cron}'})"


def make_schedule(kind: str, *, every: float | None, cron: str | None, payload: str,
                  queue: str, priority: int, max_attempts: int | None,
                  tz: str | None) -> Schedule:
    """Check ``registry.periodic``'s arguments; raises ValueError/TypeError naming the bad one."""
    check_name("kind", kind)
    check_name("queue", queue)
    check_int("priority", priority)
    if max_attempts is not None:
        check_int("max_attempts", max_attempts, minimum=1)
    if (every is None) == (cron is None):
        raise ValueError(f"periodic {kind!r}: give every= (seconds) or cron= (an expression), "
                         "exactly one")
    if every is not None:
        check_seconds("every", every, positive=True)
        if every < 1:
            raise ValueError(f"every must be at least 1 second, got {every}")
        every = float(every)
        if tz is not None:
            raise ValueError("tz= goes with cron= only (every= ticks at fixed intervals)")
    else:
        if not isinstance(cron, str):
            raise TypeError(f"cron must be a string, got {cron!r:.80}")
        cron = " ".join(cron.split())
        if len(cron.split()) != 5:
            raise ValueError(f"cron must have 5 fields (minute hour day month weekday), "
                             f"got {cron!r:.80}")
        if tz is not None:
            if not isinstance(tz, str):
                raise TypeError(f"tz must be a time zone name, got {tz!r:.80}")
            try:
                ZoneInfo(tz)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone {tz!r:.80}") from None
        try:
            next(CronSim(cron, datetime.now(timezone.utc)))
        except CronSimError as e:
            raise ValueError(f"bad cron expression {cron!r:.80}: {e}") from None
        except StopIteration:
            raise ValueError(f"cron expression {cron!r:.80} never matches") from None
    return Schedule(kind, payload, queue, priority, max_attempts, every, cron, tz)
