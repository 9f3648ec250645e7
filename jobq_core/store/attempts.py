"""When a job's attempts are used up, and when a failed job runs again: decided here, once.

A job's allowance is its ``max_attempts`` column. A worker's limit for the kind
(``Task.max_attempts``, passed to every claim as ``attempt_limits``) lowers it in the
claim itself (``claim.clamp``), so the claimed row, and the ``Job`` the worker holds,
carry the one allowance that every later decision reads: a failure (``Store.job_fail``),
a lease the reaper takes back, and the worker's completer (``retry_in``).

A retry waits ``retry_delay(attempts)`` (never less than nothing): the task's own
backoff where it has one (the completer passes it, ``retry_in``), else the queue's
(``Queue.backoff``, which ``Queue.fail`` and the reaper pass).
"""
from __future__ import annotations

from ..types import JobStatus
from .base import RetryDelay


def used_up(attempts: int, max_attempts: int) -> bool:
    """Whether a job that has made ``attempts`` attempts has none left."""
    return attempts >= max_attempts


def after_attempt(attempts: int, max_attempts: int, cancel: bool, now: float,
                  retry_delay: RetryDelay) -> tuple[JobStatus, float, float | None]:
    """(status, run_at, finished_at) of a job whose attempt failed or expired: cancelled
    when cancellation was asked for, dead when its attempts are used up, else pending
    after ``retry_delay``."""
    if cancel:
        return JobStatus.CANCELLED, now, now
    if used_up(attempts, max_attempts):
        return JobStatus.DEAD, now, now
    return JobStatus.PENDING, now + max(0.0, retry_delay(attempts)), None


def retry_in(attempts: int, max_attempts: int, delay: RetryDelay | None) -> float | None:
    """The delay a failed run's own backoff (``delay``: its task's) gives its next
    attempt; None when it has none, or when no attempt is left (``after_attempt`` then
    decides, with the queue's backoff or none)."""
    if delay is None or used_up(attempts, max_attempts):
        return None
    return delay(attempts)
