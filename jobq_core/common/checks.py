"""Argument checks shared by every constructor and method: each names the argument and the
value that was wrong, and raises ``TypeError`` for a wrong type, ``ValueError`` for a
value out of range."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..types import LIST_STATUSES, PoolKind, QueueLimits, Rate

# What a database integer column holds (SQLite and PostgreSQL's bigint alike).
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
# The last second jobq schedules or displays: 9999-12-31T23:59:59Z, as datetime can show it.
LATEST_TIME = 253402300799.0
# The longest span an argument in seconds may give (about 31 years): far below what a timer
# accepts (threading.TIMEOUT_MAX) and what a timestamp can add before LATEST_TIME.
MAX_SECONDS = 1e9
# The longest name (kind, queue, unique key ...) in bytes of UTF-8: far below what an index
# row holds (PostgreSQL: 8191 bytes, a B-tree entry 2704), with room for the other columns.
MAX_NAME_BYTES = 255
# The longest lease: a worker silent this long is gone (heartbeats extend shorter leases).
MAX_LEASE = 7 * 86400.0


def check_name(what: str, value: Any) -> None:
    """A name a job is filed under (kind, queue, unique key, worker id, ...): a non-empty
    string every store can write and index. At most ``MAX_NAME_BYTES`` of UTF-8 (a
    longer kind once made a dead-marking overflow PostgreSQL's index row, and that one row
    stopped the reaper for every job), no NUL (PostgreSQL's text refuses it) and no lone
    surrogate (no UTF-8 for it: both drivers refuse it at the write, after the checks of a
    bulk load had passed)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r:.80}")
    if len(value) > MAX_NAME_BYTES // 4 or not value.isprintable():  # the rare case
        _check_storable_name(what, value)


def _check_storable_name(what: str, value: str) -> None:
    if "\x00" in value:
        raise ValueError(f"{what} holds a NUL character, which no store can hold: "
                         f"{value!r:.80}")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError(f"{what} holds a lone surrogate (undecodable bytes?), which no "
                         f"store can hold: {value!r:.80}") from None
    if size > MAX_NAME_BYTES:
        raise ValueError(f"{what} must be at most {MAX_NAME_BYTES} bytes of UTF-8, got "
                         f"{size} bytes: {value!r:.60}")


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


def check_pool(value: Any) -> PoolKind:
    """A pool kind: a ``PoolKind`` or its string (``"thread"``, ``"process"``)."""
    try:
        return PoolKind(value)
    except ValueError:
        raise ValueError(f"pool must be {' or '.join(map(repr, map(str, PoolKind)))}, "
                         f"got {value!r:.80}") from None


def check_lease(value: Any) -> None:
    """A lease term: more than 0 seconds, at most ``MAX_LEASE``."""
    check_seconds("lease", value, positive=True, maximum=MAX_LEASE)


def check_term(what: str, value: Any) -> float | None:
    """None, or a lease-like term (a lease, a heartbeat interval) as ``check_lease``
    allows, returned as a float."""
    if value is None:
        return None
    check_seconds(what, value, positive=True, maximum=MAX_LEASE)
    return float(value)


def check_queues(queues: Sequence[str] | str | None) -> Sequence[str] | None:
    """Queue names to claim from or wait on (None: all); a single name may be given as a
    string, and comes back as a list of one."""
    if isinstance(queues, str):
        queues = [queues]
    for q in queues or ():
        check_name("queue", q)
    return queues


def check_claim(worker_id: Any, limit: Any, queues: Sequence[str] | str | None, lease: Any,
                least: int) -> Sequence[str] | None:
    """A claim's arguments, at least ``least`` jobs; returns the queues as ``check_queues``."""
    check_name("worker_id", worker_id)
    check_int("limit", limit, minimum=least)
    check_lease(lease)
    return check_queues(queues)


def check_attempt_limits(limits: Mapping[str, int] | None) -> dict[str, int] | None:
    """Attempt limits by kind (each >= 1), copied; None when there are none (the plain
    claim, which a store runs without the per-kind clamp)."""
    if not limits:
        return None
    for kind, most in limits.items():
        check_name("kind", kind)
        check_int("attempt limit", most, minimum=1)
    return dict(limits)


def check_words(search: Sequence[str] | str) -> tuple[str, ...]:
    """Search words: non-empty strings (a single string is one word)."""
    words = (search,) if isinstance(search, str) else tuple(search)
    for w in words:
        if not isinstance(w, str) or not w:
            raise ValueError(f"search words must be non-empty strings, got {w!r:.80}")
    return words


def check_status(status: Any) -> None:
    """None (any status), or one of ``LIST_STATUSES``."""
    if status is not None and status not in LIST_STATUSES:
        raise ValueError(f"unknown status {status!r:.80}; expected one of "
                         f"{', '.join(sorted(LIST_STATUSES))}")


def check_fraction(what: str, value: Any) -> float | None:
    """None, or a number from 0 to 1, returned as a float."""
    if value is None:
        return None
    if not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{what} must be between 0 and 1, got {value!r:.80}")
    return float(value)


def check_rate(rate: Any) -> Rate | None:
    """A rate limit: None (no limit), ``"5/s"``-like text or a ``Rate``, checked."""
    if rate is None:
        return None
    if isinstance(rate, str):
        return Rate.parse(rate)
    if not isinstance(rate, Rate):
        raise TypeError(f"rate must be like '5/s' or a Rate, got {rate!r:.80}")
    check_int("rate limit", rate.limit, minimum=1)
    check_seconds("rate window", rate.per, positive=True)
    return rate


def check_limits(queue: Any, concurrency: Any = None, rate: Any = None,
                 key_concurrency: Any = None, ordered: Any = False) -> QueueLimits:
    """A queue's set of limits (``Queue.set_limit``, ``Registry.queue``), checked."""
    check_name("queue", queue)
    if concurrency is not None:
        check_int("concurrency", concurrency, minimum=1)
    if key_concurrency is not None:
        check_int("key_concurrency", key_concurrency, minimum=1)
    if not isinstance(ordered, bool):
        raise TypeError(f"ordered must be True or False, got {ordered!r:.40}")
    return QueueLimits(concurrency, check_rate(rate), key_concurrency, ordered)


def check_buckets(span: Any, bucket: Any) -> None:
    """A span of time cut into buckets: 0 < bucket <= span, both in seconds."""
    check_seconds("span", span)
    check_seconds("bucket", bucket)
    if bucket <= 0 or span < bucket:
        raise ValueError(f"need 0 < bucket <= span, got bucket={bucket}, span={span}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}…({len(text)} digits)"
