"""Which reason of ``WHY_REASONS`` applies to a job: the policy of ``Queue.why``, from facts
already read, written once.

``why.py`` reads the facts for one job and words the answer; the monitor's WHY column
(``jobq_tui/views/why.py``) decides it for every row it shows from what one refresh read
(the jobs, the workers, each queue's controls in the stats, one ``Queue.holds``), so the
column cannot say something ``jobq why`` would not. Nothing here reads the database.
"""
from __future__ import annotations

from collections.abc import Iterable

from ..types import FINISHED, Hold, Job, JobStatus, QueueStats, WorkerInfo, WorkerState

_OWN_STATE = FINISHED | {JobStatus.RUNNING, JobStatus.WAITING}  # the reason is the status


def reason(job: Job, now: float, *, queue: QueueStats | None = None, hold: Hold | None = None,
           served: bool = True) -> str:
    """The first reason that applies to ``job`` at ``now`` (a name of ``WHY_REASONS``).

    For a pending job: ``queue`` is its queue's controls and running count (None: a queue
    without controls); ``hold`` what other jobs' rows say (``Queue.holds``; None: not read,
    so its key is taken as free); ``served`` whether a live worker serves its queue
    (``serves``). ``ready`` means nothing holds it: its place in line is the caller's to
    count, if it wants it."""
    if job.status in _OWN_STATE:
        return str(job.status)
    if job.run_at > now:  # not due yet: its time holds it first, whatever its queue does
        return "retry" if job.attempts else "scheduled"
    if queue is not None:
        if queue.paused:
            return "paused"
        if at_concurrency_limit(queue):
            return "queue_limit"
        if rate_window_end(queue, now) is not None:
            return "rate_limit"
        if key_held(job, queue, hold):
            return "key_held"
    return "ready" if served else "no_worker"


def at_concurrency_limit(queue: QueueStats) -> bool:
    return queue.concurrency is not None and queue.running >= queue.concurrency


def rate_window_end(queue: QueueStats, now: float) -> float | None:
    """When the queue's rate window ends, if it is open at ``now`` and has started all the
    jobs it may; else None."""
    rate, start = queue.rate, queue.window_start
    if rate is None or start is None or start + rate.per <= now:
        return None
    return start + rate.per if queue.window_count >= rate.limit else None


def key_limit(queue: QueueStats) -> int | None:
    """How many running jobs of one key the queue allows (ordered: one); None: no limit."""
    return 1 if queue.ordered else queue.key_concurrency


def key_earlier(job: Job, queue: QueueStats, hold: Hold | None) -> int | None:
    """In an ordered queue, the earlier job of ``job``'s key that has not ended: it holds
    the key until it does."""
    if job.key is None or hold is None or not queue.ordered:
        return None
    return hold.key_earlier


def key_held(job: Job, queue: QueueStats, hold: Hold | None) -> bool:
    """``job``'s key is held: by an earlier job (ordered), or its running jobs fill the
    queue's limit per key."""
    if job.key is None or hold is None or not queue.keyed:
        return False
    if key_earlier(job, queue, hold) is not None:
        return True
    limit = key_limit(queue)
    return limit is not None and hold.key_running >= limit


def serves(workers: Iterable[WorkerInfo], queue: str, now: float, beat: float) -> bool:
    """Whether a worker that is not lost (``WorkerInfo.state``; ``beat`` for one that
    recorded no interval) claims from ``queue``."""
    return any((w.queues is None or queue in w.queues) and w.state(now, beat) != WorkerState.LOST
               for w in workers)


def deciding(queue: QueueStats | None) -> QueueStats | None:
    """``queue`` with only what ``reason`` reads of it (the running count only under a
    concurrency limit, the rate window only under a rate limit): two reads of a queue give
    equal records while nothing that decides a reason changed, though its counts move with
    every job (the monitor keeps a row while its facts read the same)."""
    if queue is None:
        return None
    limited, rated = queue.concurrency is not None, queue.rate is not None
    return QueueStats(paused=queue.paused, concurrency=queue.concurrency,
                      running=queue.running if limited else 0, rate=queue.rate,
                      window_start=queue.window_start if rated else None,
                      window_count=queue.window_count if rated else 0,
                      key_concurrency=queue.key_concurrency, ordered=queue.ordered)


__all__ = ["at_concurrency_limit", "deciding", "key_earlier", "key_held", "key_limit",
           "rate_window_end", "reason", "serves"]
