"""Time source. Stored times are Unix seconds (UTC); tests inject a ``FakeClock``."""
from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Current wall-clock time as Unix seconds."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


SYSTEM_CLOCK = SystemClock()
