"""Argument checks shared by every constructor and method: each names the argument and the
value that was wrong, and raises ``TypeError`` for a wrong type, ``ValueError`` for a
value out of range."""
from __future__ import annotations

import math
from typing import Any

# What a database integer column holds (SQLite and PostgreSQL's bigint alike).
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
# The last second jobq schedules or displays: 9999-12-31T23:59:59Z, as datetime can show it.
LATEST_TIME = 253402300799.0
# The longest span an argument in seconds may give (about 31 years): far below what a timer
# accepts (threading.TIMEOUT_MAX) and what a timestamp can add before LATEST_TIME.
MAX_SECONDS = 1e9
# The longest lease: a worker silent this long is gone (heartbeats extend shorter leases).
MAX_LEASE = 7 * 86400.0


def check_name(what: str, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r:.80}")


def check_int(what: str, value: Any, minimum: int | None = None) -> None:
    """An integer a database column can hold (64 bits, signed), >= ``minimum`` if given."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{what} must be an integer, got {value!r:.80}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{what} must be an integer >= {minimum}, got {value}")
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"{what} must fit in 64 bits ({INT64_MIN} to {INT64_MAX}), "
                         f"got {_short(value)}")


def check_seconds(what: str, value: Any, *, positive: bool = False,
                  maximum: float = MAX_SECONDS) -> None:
    """A finite number of seconds, >= 0 (> 0 with ``positive``), at most ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a finite number of seconds, got {value!r:.80}")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int too big for a float
        finite = False
    if not finite:
        raise TypeError(f"{what} must be a finite number of seconds, got {_short(value)}")
    if value < 0 or (positive and value == 0):
        raise ValueError(f"{what} must be {'>' if positive else '>='} 0 seconds, got {value}")
    if value > maximum:
        raise ValueError(f"{what} must be at most {maximum:.0f} seconds, got {_short(value)}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}…({len(text)} digits)"
