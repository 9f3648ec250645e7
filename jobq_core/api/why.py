"""Why isn't this job running? (``Queue.why``.)

The reasons are tried in the order of ``WHY_REASONS`` and the first that applies wins: a
finished job says how it ended; a running one where and for how long its lease lasts; a
waiting one what it waits on; a pending one what holds it back — a time in the future
(first run or retry: not due yet, it is held by its time first), its queue paused, at its
concurrency limit or out of its rate window, its key held (by running jobs of the key, or
in an ordered queue by an earlier job of the key), no live worker serving its queue — or,
when nothing does, how many ready jobs are ahead of it.
Which reason applies is decided in ``why_policy`` (shared with the monitor's WHY column);
here are the reads for one job and the words. Nothing is written.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from ..clock import Clock
from ..common.checks import check_int
from ..common.error_groups import error_line
from ..common.textsafe import clean
from ..common.time_text import duration, timestamp
from ..errors import JobNotFound
from ..presentation import why_policy
from ..store.base import Store
from ..types import (
    DEFAULT_BEAT, Dependencies, Hold, Job, JobStatus, QueueStats, Why, WorkerInfo, WorkerState,
)

AHEAD_CAP = 10_000  # "about N jobs ahead" counts no further
HOLDERS_SHOWN = 8  # running jobs of a key named in a key_held message


class Reasons:
    """``Queue``'s verbs that say what holds jobs back (a part of ``Queue``, one of its
    bases: it uses only what it declares here)."""

    store: Store
    clock: Clock

    def why(self, job_id: int) -> Why:
        """Why the job is (not) running now: the first reason of ``WHY_REASONS`` that
        applies (``JobNotFound`` for no such job). Reads only."""
        return explain(self, job_id)  # type: ignore[arg-type]  # Queue is a Readable

    def holds(self, job_ids: Iterable[int]) -> dict[int, Hold]:
        """What holds each of these jobs back that only other jobs' rows tell (``Hold``:
        its key's running jobs and the first earlier open job of its key; the jobs it
        waits on that have not succeeded), by id; ids of no job are left out. One read of
        an index probe or two per job: what ``why`` decides for a page of jobs, with its
        queue's controls (``stats``) and the workers, without asking once per job."""
        ids = list(job_ids)
        for job_id in ids:
            check_int("job_ids", job_id, minimum=1)
        return self.store.job_holds(ids) if ids else {}


class Readable(Protocol):
    """What ``explain`` reads a queue through (``Queue`` is one; this module does not
    import it)."""

    store: Store
    clock: Clock

    def get(self, job_id: int) -> Job | None: ...
    def workers(self, *, forgotten: bool = False) -> list[WorkerInfo]: ...
    def dependencies(self, job_id: int) -> Dependencies: ...


def explain(q: Readable, job_id: int) -> Why:
    """``Queue.why`` for the job ``job_id`` of ``q``."""
    job = q.get(job_id)
    if job is None:
        raise JobNotFound(job_id)
    now = q.clock.now()
    queue, hold, served = _facts(q, job, now)
    why = why_policy.reason(job, now, queue=queue, hold=hold, served=served)
    if why in ("succeeded", "dead", "cancelled"):
        return _finished(job)
    if why == "running":
        return _running(q, job, now)
    if why == "waiting":
        return _waiting(q, job)
    if why == "ready":
        return _ready(q, job, now)
    assert queue is not None
    return _held(q, job, now, why, queue, hold)


def _facts(q: Readable, job: Job, now: float) -> tuple[QueueStats | None, Hold | None, bool]:
    """What ``why_policy.reason`` needs to know of a pending job: its queue's controls,
    what holds its key (read only where a key limit applies), whether a live worker
    serves its queue. Of a job in another state, nothing."""
    if job.status != JobStatus.PENDING:
        return None, None, True
    queue = q.store.queue_state(job.queue)
    hold = (q.store.job_holds([job.id]).get(job.id)
            if job.key is not None and queue.keyed else None)
    return queue, hold, why_policy.serves(q.workers(), job.queue, now, DEFAULT_BEAT)


def _why(job: Job, reason: str, message: str, **details: object) -> Why:
    return Why(job.id, reason, message, details)


def _finished(job: Job) -> Why:
    when = timestamp(job.finished_at) if isinstance(job.finished_at, (int, float)) else "?"
    if job.status == JobStatus.SUCCEEDED:
        return _why(job, "succeeded", f"it succeeded at {when}", finished_at=job.finished_at)
    error = clean(error_line(job.error), limit=200) if job.error else ""
    tail = f": {error}" if error else ""
    if job.status == JobStatus.DEAD:
        return _why(job, "dead", f"it is dead after {job.attempts} attempt(s){tail}",
                    finished_at=job.finished_at, attempts=job.attempts)
    return _why(job, "cancelled", f"it was cancelled at {when}{tail}",
                finished_at=job.finished_at)


def _running(q: Readable, job: Job, now: float) -> Why:
    left = (job.lease_until or now) - now
    lease = f"its lease ends in {duration(left)}" if left >= 0 else \
        f"its lease ran out {duration(-left)} ago (the reaper takes it back)"
    worker = clean(str(job.worker), limit=80)
    state = next((w.state(now, DEFAULT_BEAT) for w in q.workers(forgotten=True)
                  if w.id == job.worker), None)
    lost = " (that worker is lost)" if state == WorkerState.LOST else ""
    return _why(job, "running", f"it is running on worker {worker}{lost}; {lease}",
                worker=job.worker, lease_left=left,
                worker_state=None if state is None else str(state))


def _waiting(q: Readable, job: Job) -> Why:
    links = q.dependencies(job.id).waits_on
    open_ = [x for x in links if x.status != JobStatus.SUCCEEDED]
    waits_on = [{"id": x.job_id, "status": str(x.status)} for x in open_]
    live = (JobStatus.PENDING, JobStatus.RUNNING, JobStatus.WAITING)
    # a job retried while a dependency it needs was dead or cancelled waits for its retry
    failed = [x for x in open_ if x.status not in live and not x.allow_failed]
    if failed and not any(x.status in live for x in open_):
        names = ", ".join(f"{x.job_id} ({x.status})" for x in failed[:8])
        more = f" and {len(failed) - 8} more" if len(failed) > 8 else ""
        them = "it" if len(failed) == 1 else "them"
        return _why(job, "waiting", f"it waits on jobs {names}{more}, which ended without "
                    f"succeeding: it runs once they are retried and succeed (jobq retry); "
                    f"until then it waits (cancel it to give up on {them})", waits_on=waits_on)
    if not any(x.status in live for x in open_):
        return _why(job, "waiting", "every job it waits on has ended: the reaper's next pass "
                    "settles it (runs it)", waits_on=waits_on)
    names = ", ".join(f"{x.job_id} ({x.status})" for x in open_[:8])
    more = f" and {len(open_) - 8} more" if len(open_) > 8 else ""
    return _why(job, "waiting", f"it waits on jobs {names}{more}", waits_on=waits_on)


def _held(q: Readable, job: Job, now: float, why: str, queue: QueueStats, hold: Hold | None) -> Why:
    """A pending job held back by its queue's controls, its time, or no worker (``why``,
    as ``why_policy.reason`` decided it), in words."""
    name = clean(job.queue, limit=80)
    if why == "paused":
        return _why(job, why, f"its queue {name} is paused (jobq resume)", queue=job.queue)
    if why == "queue_limit":
        return _why(job, why, f"its queue {name} is at its concurrency limit: "
                    f"{queue.running}/{queue.concurrency} running", queue=job.queue,
                    running=queue.running, limit=queue.concurrency)
    if why == "rate_limit":
        until = why_policy.rate_window_end(queue, now)
        assert queue.rate is not None and until is not None
        return _why(job, why, f"its queue {name} started {queue.window_count} of its "
                    f"{queue.rate.limit} jobs per {duration(queue.rate.per)} in this window, "
                    f"which ends at {timestamp(until)}", queue=job.queue, until=until)
    if why == "key_held":
        assert hold is not None
        return _key_held(q, job, queue, hold)
    if why == "retry":
        return _why(job, why, f"attempt {job.attempts + 1}/{job.max_attempts} is due "
                    f"at {timestamp(job.run_at)} (in {duration(job.run_at - now)})",
                    run_at=job.run_at, attempt=job.attempts + 1)
    if why == "scheduled":
        return _why(job, why, f"it runs at {timestamp(job.run_at)} (in "
                    f"{duration(job.run_at - now)})", run_at=job.run_at)
    return _why(job, "no_worker", f"no live worker serves its queue {name}", queue=job.queue)


def _key_held(q: Readable, job: Job, queue: QueueStats, hold: Hold) -> Why:
    """Its key's running jobs fill the queue's ``key_concurrency`` (or, ordered, one of
    them runs), or (ordered) an earlier job of its key has not ended."""
    assert job.key is not None  # key_held is the reason of keyed jobs only
    key = clean(repr(job.key), limit=80)
    running, _ = q.store.key_holders(job.queue, job.key, job.id, HOLDERS_SHOWN)
    earlier = why_policy.key_earlier(job, queue, hold)
    if earlier is not None:
        return _why(job, "key_held", f"earlier job {earlier} with the same key {key} is not "
                    "done (its queue runs a key's jobs in order)", key=job.key,
                    earlier=earlier, running=running)
    limit = why_policy.key_limit(queue)
    names = ", ".join(map(str, running))
    more = f" and {hold.key_running - len(running)} more" if hold.key_running > len(running) \
        else ""
    holders = f"job {names}" if hold.key_running == 1 else f"jobs {names}{more}"
    return _why(job, "key_held", f"{key} held by {holders} ({hold.key_running}/{limit} "
                "running)", key=job.key, running=running, limit=limit)


def _ready(q: Readable, job: Job, now: float) -> Why:
    ahead = q.store.job_ahead(job, now, AHEAD_CAP)
    about = f"{ahead:,}" if ahead < AHEAD_CAP else f"over {AHEAD_CAP:,}"
    message = ("it is next in line" if ahead == 0 else
               f"it is ready: about {about} job(s) of its queue are ahead of it")
    return _why(job, "ready", message, ahead=ahead)
