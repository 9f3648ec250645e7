"""The monitor's reading thread: one long-lived thread runs ``Source.poll`` for each
request, one at a time, and hands the result to the event loop.

Why not a Textual thread worker per poll: each costs a ``Worker`` object, a description,
three state-change messages and an executor hand-off, which at one poll a second was a
measurable share of an idle monitor's CPU (``bench/tui_cpu.py``). Here a poll costs one
queue hand-off each way. No Textual here: the app gives the loop and what to call.

Invariants: the app asks for one poll at a time (``MonitorApp.request_poll``), so the
queue holds at most one request; results are delivered on the event loop with
``call_soon_threadsafe``, never touching widgets from this thread.
"""
from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from jobq_core.presentation.views.filters import Filter
from jobq_core.presentation.views.snapshot import Snapshot
from .source import Source, Unavailable

if TYPE_CHECKING:
    from jobq_core.presentation.views.base import View

Deliver = Callable[[Snapshot | None, "str | None"], None]


class Poller:
    def __init__(self, source: Source, loop: asyncio.AbstractEventLoop, deliver: Deliver):
        """Made on the event loop: ``deliver`` runs there in the context current now (the
        app's context variables, which Textual looks itself up in)."""
        self._source = source
        self._loop = loop
        self._deliver = deliver
        self._context = contextvars.copy_context()
        self._requests: queue.SimpleQueue[tuple[View, Filter, bool, bool] | None] = (
            queue.SimpleQueue())
        self._thread = threading.Thread(target=self._run, name="jobq-tui poll", daemon=True)
        self._thread.start()

    def request(self, view: View, filt: Filter, grouped: bool, force: bool) -> None:
        """Poll ``view`` (from the event loop); ``deliver`` gets the result there."""
        self._requests.put((view, filt, grouped, force))

    def close(self, timeout: float = 3.0) -> None:
        """Stop after the poll under way, if any (waiting for it up to ``timeout``): the
        source may be closed once this returns."""
        self._requests.put(None)
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        while (request := self._requests.get()) is not None:
            view, filt, grouped, force = request
            try:
                result = self._source.poll(view, filt, grouped=grouped, force=force), None
            except Unavailable as e:
                result = None, str(e)
            except Exception as e:  # never let a surprise kill the monitor: show it, go on
                result = None, f"{type(e).__name__}: {e}"
            try:
                self._loop.call_soon_threadsafe(self._deliver, *result, context=self._context)
            except RuntimeError:  # the loop has closed: the monitor is gone
                return
