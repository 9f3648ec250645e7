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


def succeeded_job(queue: Queue, kind: str = "k", result=None, **enqueue_options) -> int:
    """A job that ran once and succeeded; its id."""
    job_id = queue.enqueue(kind, **enqueue_options)
    job = queue.claim("w")
    assert job.id == job_id, "another job was ready first"
    queue.complete(job.id, job.token, result)
    return job_id

