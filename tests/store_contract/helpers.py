"""Jobs in a given state, made through the public API, for the contract tests."""
from __future__ import annotations

from jobq_core import Queue


def dead_job(queue: Queue, kind: str = "k", error: str = "boom", queue_name: str = "default",
             **enqueue_options) -> int:
    """A job that failed its only attempt with ``error``; its id."""
    job_id = queue.enqueue(kind, queue=queue_name, max_attempts=1, **enqueue_options)
    job = queue.claim("w", queues=[queue_name])
    assert job.id == job_id, "another job was ready first"
    queue.fail(job.id, job.token, error)
    assert queue.get(job_id).status == "dead"
    return job_id


def run(queue: Queue, job_id: int, result=None) -> None:
    """Claim ``job_id`` (it must be the next ready job) and complete it."""
    job = queue.claim("w")
    assert job is not None and job.id == job_id, (job, job_id)
    queue.complete(job.id, job.token, result)


def status(queue: Queue, *ids: int) -> list[str]:
    return [str(queue.get(i).status) for i in ids]


def unsettled(store, job_id: int) -> None:
    """Put ``job_id`` back to waiting though its dependencies have ended: the state a crash
    between a completion and its settling leaves."""
    store.backend.run(lambda c, _again: c.execute(
        store.statements.TO_WAITING.replace("status='pending'", "status<>'waiting'"),
        (job_id,)))


def succeeded_job(queue: Queue, kind: str = "k", result=None, **enqueue_options) -> int:
    """A job that ran once and succeeded; its id."""
    job_id = queue.enqueue(kind, **enqueue_options)
    job = queue.claim("w")
    assert job.id == job_id, "another job was ready first"
    queue.complete(job.id, job.token, result)
    return job_id

