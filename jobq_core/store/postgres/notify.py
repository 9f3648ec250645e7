"""Sending the change signal: ``pg_notify('jobq', queue)`` after work becomes runnable,
limited per queue by ``store/notify_limiter.py`` (the rule, and why its window is 10 ms).

NOTIFY takes a cluster-wide lock at commit, so a process notifies a queue at most once per
``Notifier.EVERY`` seconds; there is no per-row trigger.
"""
from __future__ import annotations

from ..notify_limiter import NotifyLimiter
from .connection import PgPool
from .dialect import NOTIFY, text_array


class Notifier(NotifyLimiter):
    """``NotifyLimiter`` sending its trailing notifications through the store's pool."""

    def __init__(self, conns: PgPool):
        super().__init__(lambda queues: conns.run(
            lambda c, _again: c.execute(NOTIFY, (text_array(queues),))))
