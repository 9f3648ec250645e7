"""The monitor's refresh loop: when it reads the database and when it draws. A mixin of
``MonitorApp``; how often is the pacer's decision (``pacer``), the timers are here.

Invariants and hazards:

* At most one poll runs at a time: the next is scheduled when the last one has finished
  (``_poll_done``), and a request made meanwhile just sets ``_again``.
* Polls run in the ``Poller``'s thread; their results come back on the event loop.
* One beat, just after each whole second of the clock (``_beat``), drives both reading
  and drawing: it starts a poll when one is due, and the poll's result is drawn with
  that second's countdowns; otherwise it re-renders rows from the last snapshot with the
  current time (countdowns, ages) without reading the database. So a second costs at
  most one screen update (with Textual, an update costs about as much as all it
  redraws, whatever changed: ``bench/tui_cpu.py``), and unchanged cells are not touched.
* Nothing is read while paused or under a modal screen, except when asked (``r``).

Needs from its host app: ``source``, ``pacer``, ``clock``, ``live``, ``filter``,
``grouped``, ``shown``, ``snapshot``, ``error``, ``render_all()``, ``_modal_open()``, and
Textual's timers.
"""
from __future__ import annotations

import asyncio
import time

from .pacer import Beat, beat_drifted, first_beat
from .poller import Poller
from jobq_core.presentation.views.snapshot import Snapshot


class RefreshLoop:
    # Per app, set on first use (class values until then)
    _polling = False
    _again = False
    _timer = None  # the next poll, when polls come faster than once a second
    _beat_timer = None
    _poll_started = 0.0  # monotonic, when the last poll was asked for
    _poller: Poller | None = None  # started with the first poll

    def request_poll(self, force: bool = False) -> None:
        """Poll now, or right after the poll in flight finishes."""
        self.stop_timed_poll()
        if self._polling:
            self._again = True
            return
        if not self.screen_stack:
            return
        if self._poller is None:
            self._poller = Poller(self.source, asyncio.get_running_loop(), self._poll_done)
        self._polling = True
        self._poll_started = time.monotonic()
        self._poller.request(self.shown, self.filter, self.grouped, force)

    def _poll_done(self, snap: Snapshot | None, error: str | None) -> None:
        self._polling = False
        self.error = error
        if snap is not None:
            self.snapshot = snap
        # Slower while a refresh costs more than REFRESH_SHARE of a core (``pacer``).
        interval = self.pacer.polled(snap, error)
        fresh = snap is not None and not snap.reused
        # Tables too: this second's countdowns are drawn with the poll's result, in the
        # same screen update (rows are rebuilt only when their snapshot or second changed).
        started = time.thread_time()
        self.render_all()
        if fresh:  # what the draw cost, up to the screen's update (this thread's CPU)
            self.call_after_refresh(self._drawn, started)
        if self._again:
            self._again = False
            self.request_poll()
        elif self.live and interval < 1.0:  # faster than the beat
            self._timer = self.set_timer(interval, self._timed_poll)

    def _drawn(self, started: float) -> None:
        self.pacer.drawn(time.thread_time() - started)

    def _timed_poll(self) -> None:
        self._timer = None
        if self.live and not self._modal_open():
            self.request_poll()

    def stop_polling(self) -> None:
        """No more polls: the one under way, if any, is waited for (the source may be
        closed after)."""
        self.stop_timed_poll()
        if self._poller is not None:
            self._poller.close()

    def stop_timed_poll(self) -> None:
        """Drop the next poll set for less than a beat away (paused)."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _schedule_beat(self) -> None:
        """Start the 1 Hz beat at the next whole second of the clock (``first_beat``).
        One repeating timer: Textual makes a timer at some cost (a description, a look at
        its callback's signature), too much to make one every second."""
        if self._beat_timer is not None:
            self._beat_timer.stop()
        self._beat_timer = self.set_timer(first_beat(self.clock.now()), self._start_beats)

    def _start_beats(self) -> None:
        self._beat_timer = self.set_interval(1.0, self._beat)
        self._beat()

    def _beat(self) -> None:
        """Just after each whole second of the clock: poll when one is due (its result
        is drawn with this second's countdowns, in one screen update), else draw the
        countdowns and ages alone. Nothing is read while paused or under a modal screen,
        nor drawn while a poll of this second is on its way."""
        if beat_drifted(self.clock.now()):
            self._schedule_beat()
        if self._modal_open():
            return
        beat = self.pacer.beat(self.live, self._polling, time.monotonic() - self._poll_started)
        if beat is Beat.POLL:
            self.request_poll()
        elif beat is Beat.DRAW:
            self.render_all()


__all__ = ["RefreshLoop"]
