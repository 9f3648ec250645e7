"""The job filter ``Queue.list``, ``count``, ``dead_groups`` and ``retry_dead`` share, checked
once (kept out of ``checks.py``, which the store's modules import: the filter's record is the
store's)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..common.checks import check_int, check_status, check_words
from ..store.base import ListFilter


def job_filter(status: Any = None, queue: str | None = None, kind: str | None = None,
               worker: str | None = None, error_contains: str | None = None, *,
               limit: Any = 100, offset: Any = 0, payloads: bool = True, prefix: bool = False,
               search: Sequence[str] | str = (), key: str | None = None,
               newest: Any = None) -> ListFilter:
    """A ``ListFilter`` whose status is one ``list`` knows, whose limit and offset are
    integers >= 0, ``newest`` None or >= 1, and whose search words are non-empty strings."""
    check_status(status)
    check_int("limit", limit, minimum=0)
    check_int("offset", offset, minimum=0)
    if newest is not None:
        check_int("newest", newest, minimum=1)
    return ListFilter(status, queue, kind, worker, error_contains, limit, offset, payloads,
                      prefix, check_words(search), key, newest)
