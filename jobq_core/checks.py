"""Argument checks shared by every constructor and method: each names the argument and the
value that was wrong, and raises ``TypeError`` for a wrong type, ``ValueError`` for a
value out of range."""
from __future__ import annotations

import math
from typing import Any


def check_name(what: str, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r:.80}")


def check_int(what: str, value: Any, minimum: int | None = None) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{what} must be an integer, got {value!r:.80}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{what} must be an integer >= {minimum}, got {value}")


def check_seconds(what: str, value: Any, *, positive: bool = False) -> None:
    """A finite number of seconds, >= 0 (> 0 with ``positive``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TypeError(f"{what} must be a finite number of seconds, got {value!r:.80}")
    if value < 0 or (positive and value == 0):
        raise ValueError(f"{what} must be {'>' if positive else '>='} 0 seconds, got {value}")
