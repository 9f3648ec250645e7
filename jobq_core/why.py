"""Why isn't this job running? (``Queue.why``.)

The reasons are tried in the order of ``WHY_REASONS`` and the first that applies wins: a
finished job says how it ended; a running one where and for how long its lease lasts; a
waiting one what it waits on; a pending one what holds it back — its queue paused, at its
concurrency limit or out of its rate window, its key held (by running jobs of the key, or
in an ordered queue by an earlier job of the key), a time in the future (first run or retry), no
live worker serving its queue — or, when nothing does, how many ready jobs are ahead of it.
Every read is one the monitor also makes; nothing is written.
"""
from __future__ import annotations

from .display import duration, timestamp
from .errors import JobNotFound
from .error_groups import error_line
from .textsafe import clean
from .types import DEFAULT_BEAT, Job, JobStatus, Why, WorkerState

AHEAD_CAP = 10_000  # "about N jobs ahead" counts no further
HOLDERS_SHOWN = 8  # running jobs of a key named in a key_held message


def explain(q, job_id: int) -> Why:
    """``Queue.why``: ``q`` is the queue (passed in: this module does not import Queue)."""
    job = q.get(job_id)
    if job is None:
        raise JobNotFound(job_id)
    now = q.clock.now()
    return (_finished(job) or _running(q, job, now) or _waiting(q, job)
            or _held(q, job, now) or _ready(q, job, now))


def _why(job: Job, reason: str, message: str, **details) -> Why:
    return Why(job.id, reason, message, details)


def _finished(job: Job) -> Why | None:
    if job.status not in (JobStatus.SUCCEEDED, JobStatus.DEAD, JobStatus.CANCELLED):
        return None
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


def _running(q, job: Job, now: float) -> Why | None:
    if job.status != JobStatus.RUNNING:
        return None
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


def _waiting(q, job: Job) -> Why | None:
    if job.status != JobStatus.WAITING:
        return None
    open_ = [x for x in q.dependencies(job.id).waits_on if x.status != JobStatus.SUCCEEDED]
    names = ", ".join(f"{x.job_id} ({x.status})" for x in open_[:8])
    more = f" and {len(open_) - 8} more" if len(open_) > 8 else ""
    return _why(job, "waiting", f"it waits on jobs {names}{more}",
                waits_on=[{"id": x.job_id, "status": str(x.status)} for x in open_])


def _held(q, job: Job, now: float) -> Why | None:
    """A pending job held back by its queue's controls, its time, or no worker."""
    queue = clean(job.queue, limit=80)
    controls, running = q.store.queue_state(job.queue)
    if controls is not None:
        (paused, concurrency, rate_limit, rate_per, window_start, window_count,
         key_concurrency, ordered) = controls
        if paused:
            return _why(job, "paused", f"its queue {queue} is paused (jobq resume)",
                        queue=job.queue)
        if concurrency is not None and running >= concurrency:
            return _why(job, "queue_limit", f"its queue {queue} is at its concurrency limit: "
                        f"{running}/{concurrency} running", queue=job.queue,
                        running=running, limit=concurrency)
        if (rate_limit is not None and window_start is not None
                and window_start + rate_per > now and window_count >= rate_limit):
            until = window_start + rate_per
            return _why(job, "rate_limit", f"its queue {queue} started {window_count} of its "
                        f"{rate_limit} jobs per {duration(rate_per)} in this window, which "
                        f"ends at {timestamp(until)}", queue=job.queue, until=until)
        if job.key is not None and (key_concurrency is not None or ordered):
            held = _key_held(q, job, key_concurrency, bool(ordered))
            if held is not None:
                return held
    if job.run_at > now:
        if job.attempts:
            return _why(job, "retry", f"attempt {job.attempts + 1}/{job.max_attempts} is due "
                        f"at {timestamp(job.run_at)} (in {duration(job.run_at - now)})",
                        run_at=job.run_at, attempt=job.attempts + 1)
        return _why(job, "scheduled", f"it runs at {timestamp(job.run_at)} (in "
                    f"{duration(job.run_at - now)})", run_at=job.run_at)
    live = [w for w in q.workers() if w.state(now, DEFAULT_BEAT) != WorkerState.LOST
            and (w.queues is None or job.queue in w.queues)]
    if not live:
        return _why(job, "no_worker", f"no live worker serves its queue {queue}",
                    queue=job.queue)
    return None


def _key_held(q, job: Job, key_concurrency: int | None, ordered: bool) -> Why | None:
    """Its key's running jobs fill the queue's ``key_concurrency`` (or, ordered, one of
    them runs), or (ordered) an earlier job of its key has not ended."""
    key = clean(repr(job.key), limit=80)
    running, earlier = q.store.key_holders(job.queue, job.key, job.id, HOLDERS_SHOWN)
    if ordered and earlier is not None:
        return _why(job, "key_held", f"earlier job {earlier} with the same key {key} is not "
                    "done (its queue runs a key's jobs in order)", key=job.key,
                    earlier=earlier, running=running)
    limit = 1 if ordered else key_concurrency
    if limit is None or len(running) < limit:
        return None
    names = ", ".join(map(str, running))
    holders = f"job {names}" if len(running) == 1 else f"jobs {names}"
    return _why(job, "key_held", f"{key} held by {holders} ({len(running)}/{limit} "
                "running)", key=job.key, running=running, limit=limit)


def _ready(q, job: Job, now: float) -> Why:
    ahead = q.store.job_ahead(job, now, AHEAD_CAP)
    about = f"{ahead:,}" if ahead < AHEAD_CAP else f"over {AHEAD_CAP:,}"
    message = ("it is next in line" if ahead == 0 else
               f"it is ready: about {about} job(s) of its queue are ahead of it")
    return _why(job, "ready", message, ahead=ahead)
