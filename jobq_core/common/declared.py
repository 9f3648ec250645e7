"""Limits declared in code (``Registry.queue``), as the worker that applies them records
them for every reader: one ``jobq_meta`` row per queue, key ``declared.QUEUE``, value JSON
(``{"concurrency": 5, "rate": [100, 60.0], "key_concurrency": 2, "ordered": false}``).
A row in ``jobq_meta`` rather than a table: no migration, and a worker of an older version
ignores it."""
from __future__ import annotations

import json
from typing import Any

from ..types import QueueLimits, Rate

PREFIX = "declared."


def key(queue: str) -> str:
    return PREFIX + queue


def encode(limits: QueueLimits) -> str:
    rate = None if limits.rate is None else [limits.rate.limit, limits.rate.per]
    return json.dumps({"concurrency": limits.concurrency, "rate": rate,
                       "key_concurrency": limits.key_concurrency, "ordered": limits.ordered},
                      separators=(",", ":"))


def decode(value: Any) -> QueueLimits | None:
    """A recorded declaration, or None when it is not one (another program wrote the row)."""
    try:
        d = json.loads(value)
        rate = d.get("rate")
        limits = QueueLimits(d.get("concurrency"),
                             None if rate is None else Rate(int(rate[0]), float(rate[1])),
                             d.get("key_concurrency"), d.get("ordered", False))
    except (TypeError, ValueError, KeyError, IndexError, AttributeError):
        return None
    if not (_count(limits.concurrency) and _count(limits.key_concurrency)
            and isinstance(limits.ordered, bool)):
        return None
    return limits


def _count(v: object) -> bool:
    return v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 1)


def declarations(settings: dict[str, str]) -> dict[str, QueueLimits]:
    """The recorded declarations among ``jobq_meta``'s rows, by queue."""
    out = {}
    for k, v in settings.items():
        if k.startswith(PREFIX) and (limits := decode(v)) is not None:
            out[k[len(PREFIX):]] = limits
    return out
