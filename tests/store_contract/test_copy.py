"""Copying pending and dead jobs in from another queue (``Queue.copy_in``, the store's
``job_copy_in``): they arrive as they were, in one transaction, whatever store they come
from."""
from __future__ import annotations

import pytest

from jobq_core import InvalidState, Queue

from .helpers import dead_job


@pytest.fixture
def source(tmp_path, clock):
    with Queue(tmp_path / "source.db", clock=clock, max_attempts=2) as q:
        yield q


def _pending_and_dead(q):
    dead_job(q, "doomed", "RuntimeError: gone", payload=[1, 2])
    q.enqueue("plain", {"n": 1}, queue="mail", priority=5)
    q.enqueue("later", {"big": "x" * 5000}, delay=600)
    q.enqueue("keyed", None, unique_key="k-1")


def test_pending_and_dead_jobs_arrive_as_they_were(source, queue):
    _pending_and_dead(source)
    jobs = source.list("pending") + source.list("dead")
    ids = queue.copy_in(jobs)
    assert len(ids) == 4
    for old, new_id in zip(jobs, ids):
        new = queue.get(new_id)
        for field in ("kind", "queue", "payload", "priority", "status", "attempts",
                      "max_attempts", "run_at", "error", "created_at", "finished_at",
                      "unique_key"):
            assert getattr(new, field) == getattr(old, field), field
    assert queue.count("pending") == 3 and queue.count("dead") == 1


def test_a_pending_job_whose_key_is_held_here_yields_the_holder(source, queue):
    held = queue.enqueue("mine", unique_key="k-1")
    source.enqueue("theirs", unique_key="k-1")
    assert queue.copy_in(source.list("pending")) == [held]
    assert queue.count() == 1


def test_a_dead_job_keeps_its_key_beside_a_live_holder(source, queue):
    held = queue.enqueue("mine", unique_key="k-1")
    source.enqueue("theirs", unique_key="k-1", max_attempts=1)
    job = source.claim("w")
    source.fail(job.id, job.token, "no")
    [copied] = queue.copy_in(source.list("dead"))
    assert copied != held and queue.get(copied).unique_key == "k-1"


def test_running_or_finished_jobs_are_refused_and_nothing_is_written(source, queue):
    source.enqueue("a")
    source.enqueue("b")
    source.claim("w")
    with pytest.raises(InvalidState, match="only pending and dead"):
        queue.copy_in(source.list())
    assert queue.count() == 0


def test_copied_jobs_run_here(source, queue):
    source.enqueue("k", {"n": 7})
    queue.copy_in(source.list("pending"))
    job = queue.claim("w")
    queue.complete(job.id, job.token)
    assert queue.get(job.id).status == "succeeded"
