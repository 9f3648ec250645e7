"""Times and durations as people read and type them: one format for every message jobq
writes (errors stored in the database included) and every front end."""
from __future__ import annotations

import math
import re
import time

from .checks import LATEST_TIME


def duration(seconds: float | None) -> str:
    """A short duration: 350ms, 42s, 9m05s, 12m, 3h12m, 2d04h; ``-`` for None; a negative
    one counts as 0. Rounded down. Past ten minutes seconds are dropped: nobody needs
    them there, and in the monitor a cell that changes every second costs a redraw."""
    if seconds is None:
        return "-"
    if 0 < seconds < 1:
        return f"{int(seconds * 1000)}ms"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)([smhdw]?)")


def parse_duration(text: str) -> float:
    """A duration as people type it -> seconds: ``90``, ``1.5``, ``90s``, ``15m``, ``12h``,
    ``7d``, ``2w`` or a sum like ``1h30m``. Every duration option of the CLI and the
    monitor reads its value with this, so each takes the same forms. Raises ValueError,
    naming the text and the forms it takes."""
    s = str(text).strip().lower()
    parts = _DURATION_PART.findall(s) if s else []
    if not parts or "".join(n + u for n, u in parts) != s:
        raise ValueError(f"bad duration {text!r:.40}: use seconds or a number with a unit, "
                         "like 90, 90s, 15m, 12h, 7d, 2w or 1h30m")
    return sum(float(n) * _UNITS[u or "s"] for n, u in parts)


def timestamp(t: float | None) -> str:
    """A moment in UTC, to the second: ``2026-01-01 00:00:00 UTC``; ``-`` for None; a
    value that is no time jobq writes, as itself and ``(invalid time)``."""
    if t is None:
        return "-"
    if not is_time(t):
        return f"{t!r:.40} (invalid time)"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))



def is_time(value: object) -> bool:
    # type(), not isinstance: a bool or an int subclass is no time jobq wrote
    return ((type(value) is int or type(value) is float) and math.isfinite(value)
            and -LATEST_TIME <= value <= LATEST_TIME)
