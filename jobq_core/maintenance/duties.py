"""The maintenance leader's duties, on a thread of their own (``jobq-maintenance``): the
reaper, retention and the care of jobq's tables (``tables.py``), each on its own
schedule, while ``Elector.leading`` says this worker leads. A thread apart from the heartbeat's, so that a long retention pass (a million rows
due after retention was first set) never delays a lease's renewal."""
from __future__ import annotations

import threading

from .leader import Elector
from .reaper import Reaper
from .retention import Pruner
from .tables import TableCare

TICK = 1.0  # seconds between looks at whether a duty is due


class Duties:
    def __init__(self, elector: Elector, reaper: Reaper, pruner: Pruner,
                 stop: threading.Event, care: TableCare | None = None):
        self.elector = elector
        self.reaper = reaper
        self.pruner = pruner
        self.care = care
        self._stop = stop
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="jobq-maintenance",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """Look now (the heartbeat calls it when this worker has just been elected)."""
        self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            if self.elector.leading:
                self.reaper.run_if_due()
            if self.elector.leading and not self._stop.is_set():
                self.pruner.run_if_due()
            if self.care is not None and self.elector.leading and not self._stop.is_set():
                self.care.run_if_due()
            self._wake.wait(TICK)
            self._wake.clear()
