"""The WHY column of the Running and All views (from 120 columns): why each job is (not)
running, in a few words.

The reason is decided by ``jobq_core.presentation.why_policy``, the policy ``jobq why`` follows, from
what one refresh read: the job, the workers, its queue's controls (in the stats), and for
the All view one ``Queue.holds`` for the page's keyed pending jobs and waiting jobs
(``AllJobs.read_holds``). Never ``Queue.why`` per row: that is several reads a job, every
second, over ssh. A cell is the reason's name, then a detail where one is known cheaply:
``queue_limit 4/4``, ``rate_limit in 12s`` (when its window ends), ``key_held 2/2`` (running
jobs of the key / the limit) or ``key_held after 31`` (ordered: an earlier job of the key),
``retry 2/3 in 5m``, ``scheduled in 12s``, ``waiting 2`` (the jobs it waits on that have
not succeeded). ``ready`` comes without its place in line (a count per row; the detail
screen has it). A running job's cell is about its lease: ``running``; ``running, worker
late`` or ``lost`` (the worker stopped beating: unless it beats again, the lease runs out
and the reaper takes the job back); ``running, lease over`` (run out; the reaper has not
taken it back yet). Only words the monitor composed: no database text.

Hazard: a row is kept while its job and these facts read the same (``RowCache``), and the
cell is ``Timed`` (a schedule falls due, a window closes, a worker goes silent with no
write at all). Whether a live worker serves the queue moves with every beat of every
worker, so a row keeps only whether one did at the read; its cell asks ``SERVING``, which
each refresh brings up to date, whether one does now.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...types import (
    DEFAULT_BEAT, WHY_REASONS, Hold, Job, JobStatus, QueueStats, WorkerInfo, WorkerState,
)
from .. import why_policy as policy
from .base import Column
from .cells import BAD, DIM, WARN, Cell, Shown, Timed, age, fixed
from .snapshot import Snapshot

WHY = Column("why", "WHY", True, shrink=2, least=11, want=16)  # a reason's name whole

_STYLE = {"paused": WARN, "queue_limit": WARN, "rate_limit": WARN, "key_held": WARN,
          "no_worker": BAD, "succeeded": DIM, "dead": DIM, "cancelled": DIM}


@dataclass(frozen=True, slots=True)
class Facts:
    """What a job's WHY cell is decided by besides the job: ``policy.reason``'s arguments
    (``served`` as it was at the read). Compared to keep a row."""

    queue: QueueStats | None = None
    hold: Hold | None = None
    served: bool = True


NO_FACTS = Facts()


class Serving:
    """Whether a live worker serves a queue now, by the workers of the latest refresh
    (``update``, at every ``rows``): what a kept row's cell asks (see the hazard above)."""

    def __init__(self) -> None:
        self._workers: tuple[WorkerInfo, ...] = ()
        self._beat = DEFAULT_BEAT

    def update(self, workers: tuple[WorkerInfo, ...], beat: float) -> None:
        self._workers, self._beat = workers, beat

    def __call__(self, queue: str, now: float) -> bool:
        return policy.serves(self._workers, queue, now, self._beat)


SERVING = Serving()


class RowFacts:
    """The facts of one refresh, per job (``of``): each queue's worked out once."""

    def __init__(self, snap: Snapshot, beat: float):
        self._snap, self._beat = snap, beat
        self._queues: dict[str, tuple[QueueStats | None, bool]] = {}
        SERVING.update(snap.workers, beat)

    def of(self, j: Job) -> Facts:
        """What ``j``'s cell is made from besides the job (and a running job's worker):
        part of what its row is kept by, so only what decides the reason and its words."""
        if j.status == JobStatus.WAITING:
            return Facts(hold=self._snap.holds.get(j.id))
        if j.status != JobStatus.PENDING:
            return NO_FACTS
        queue = self._queues.get(j.queue)
        if queue is None:
            snap = self._snap
            queue = self._queues[j.queue] = (
                policy.deciding(snap.stats.queues.get(j.queue)),
                policy.serves(snap.workers, j.queue, snap.read_at, self._beat))
        return Facts(queue[0], self._snap.holds.get(j.id), queue[1])


def why_cell(j: Job, beat: float, *, worker: WorkerInfo | None = None,
             facts: Facts = NO_FACTS) -> Shown:
    """``j``'s WHY cell: for a running job, from its lease and its ``worker``'s state; for
    another, from ``facts`` (``RowFacts.of``)."""
    if j.status == JobStatus.RUNNING:
        return Timed(lambda now: running_text(
            j, now, None if worker is None else worker.state(now, beat)))
    return Timed(lambda now: held_text(j, now, facts.queue, facts.hold,
                                       SERVING(j.queue, now)))


def why_sort(j: Job, facts: Facts = NO_FACTS, at: float = 0.0) -> int:
    """The WHY column's sort value: the reason's place in ``WHY_REASONS`` at ``at`` (the
    read), so a sort groups the rows by reason in the order they are tried."""
    return WHY_REASONS.index(policy.reason(j, at, queue=facts.queue, hold=facts.hold,
                                           served=facts.served))


def running_text(j: Job, now: float, state: WorkerState | None) -> Cell:
    if j.lease_until is not None and j.lease_until <= now:
        return fixed("running, lease over", BAD)
    if state in (WorkerState.LATE, WorkerState.LOST):
        return fixed(f"running, worker {state}", WARN if state == WorkerState.LATE else BAD)
    return fixed("running")


def held_text(j: Job, now: float, queue: QueueStats | None, hold: Hold | None,
              served: bool) -> Cell:
    """The reason (``policy.reason``) and its detail, for a job that is not running."""
    why = policy.reason(j, now, queue=queue, hold=hold, served=served)
    detail = ""
    if why == "waiting" and hold is not None and hold.waits_on:
        detail = str(hold.waits_on)
    elif why == "queue_limit" and queue is not None:
        detail = f"{queue.running}/{queue.concurrency}"
    elif why == "rate_limit" and queue is not None:
        detail = f"in {age((policy.rate_window_end(queue, now) or now) - now)}"
    elif why == "key_held" and queue is not None and hold is not None:
        earlier = policy.key_earlier(j, queue, hold)
        detail = (f"after {earlier}" if earlier is not None
                  else f"{hold.key_running}/{policy.key_limit(queue)}")
    elif why == "retry":
        detail = f"{j.attempts + 1}/{j.max_attempts} in {age(j.run_at - now)}"
    elif why == "scheduled":
        detail = f"in {age(j.run_at - now)}"
    return fixed(f"{why} {detail}" if detail else why, _STYLE.get(why, ""))


__all__ = ["NO_FACTS", "SERVING", "WHY", "Facts", "RowFacts", "held_text", "running_text",
           "why_cell", "why_sort"]
