"""When the monitor reads and draws: at the interval asked for, or more slowly while a
refresh costs more CPU than ``REFRESH_SHARE`` of a core allows; and, on the 1 Hz beat
just after each whole second of the clock, whether to poll or only to draw the
countdowns again. No Textual here (the app owns the timers).

A refresh is a read (``Snapshot.read_cpu``, its thread's CPU) and the draw of what was
read (``drawn``: the event loop's CPU from the poll's result to the screen update). In a
drain of thousands of jobs a second every count is bigger and every row new, so both
grow; the pacer then stretches the interval to keep the monitor under its share, and the
header shows the interval really used (``interval``). The countdowns' beat between
refreshes is not counted.
"""
from __future__ import annotations

import math
from enum import Enum

from jobq_core.presentation.views.snapshot import Snapshot

# At most this share of a core goes to refreshing: reading the database and drawing what
# was read.
REFRESH_SHARE = 0.02
ERROR_INTERVAL = 2.0  # at least this long between tries while the database is unreadable
BEAT_AFTER = 0.01  # seconds past a whole second of the clock at which the beat comes


class Beat(Enum):
    """What a beat does."""

    POLL = "poll"  # read; the result is drawn with this second's countdowns
    DRAW = "draw"  # draw the countdowns and ages of the last read alone
    WAIT = "wait"  # a poll of this second is on its way: it draws


def first_beat(now: float) -> float:
    """Seconds from clock time ``now`` to the next beat (not one that close)."""
    delay = math.floor(now) + 1 + BEAT_AFTER - now
    return delay if delay > 0.05 else delay + 1


def beat_drifted(now: float) -> bool:
    """Whether a beat at ``now`` is no longer just after a whole second (the clock moved
    away from the timer: the beat is started again)."""
    return (now - BEAT_AFTER) % 1.0 > 0.25


def stale_after(interval: float) -> float:
    """Seconds after which data not confirmed current counts as stale (polls hang or
    fail): then countdowns and warnings freeze at the data's time."""
    return max(5.0, 3 * interval)


class RefreshPacer:
    def __init__(self, interval: float):
        self.asked = interval  # the interval the operator asked for
        self.interval = interval  # the one in use: longer while refreshes are costly
        # CPU of the last two fresh draws. The lesser counts: a view's first draw (a key
        # pressed, a resize) costs more, once.
        self.draws: tuple[float, float] = (0.0, 0.0)
        # The same for reads: the first after the start (cold caches, every statement
        # prepared for the first time, the last hour counted) cost 0.1 s of CPU where the
        # next cost 0.01, and the header said "live 5.1s" until the second read.
        self.reads: tuple[float, float] = (0.0, 0.0)

    def polled(self, snap: Snapshot | None, error: str | None) -> float:
        """The interval until the next poll, after one that returned ``snap`` (None: it
        failed with ``error``)."""
        delay = self.asked if error is None else max(self.asked, ERROR_INTERVAL)
        if snap is not None and not snap.reused:
            self.reads = (self.reads[1], snap.read_cpu)
            cost = min(self.reads) + min(self.draws)
            self.interval = max(delay, math.ceil(cost / REFRESH_SHARE * 10 - 1e-9) / 10)
        else:  # nothing re-read (a cheap check), or nothing read
            self.interval = delay
        return self.interval

    def beat(self, live: bool, polling: bool, since_poll: float) -> Beat:
        """What the beat does, ``since_poll`` seconds (monotonic) after the last poll
        started. A poll is due a little early (0.2 s), so one that lands just before its
        second does not wait a whole second more."""
        if live and not polling and since_poll >= max(1.0, self.interval) - 0.2:
            return Beat.POLL
        if polling and since_poll < 0.9:
            return Beat.WAIT
        return Beat.DRAW

    def frozen_at(self, snap: Snapshot | None, now: float, current: bool) -> float | None:
        """The time to show ``snap`` at, when it is not ``now``: while paused, unreadable
        (not ``current``) or stale, the last time the data was known current. Countdowns
        and warnings then stop there instead of running on into alarms the data does not
        support."""
        if snap is None:
            return None
        if current and now - snap.checked_at <= stale_after(self.interval):
            return None
        return min(now, snap.checked_at)

    def drawn(self, cpu: float) -> None:
        """A fresh snapshot's draw cost ``cpu`` seconds of the event loop's thread."""
        self.draws = (self.draws[1], cpu)


__all__ = ["stale_after", "BEAT_AFTER", "ERROR_INTERVAL", "REFRESH_SHARE", "Beat", "RefreshPacer",
           "beat_drifted", "first_beat"]
