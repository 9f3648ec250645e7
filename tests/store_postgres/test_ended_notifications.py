"""The ended-jobs signal on PostgreSQL (``Store.watch_ends``, what ``Queue.wait`` sleeps
on): while a watch of ended jobs lives, every statement that ends jobs notifies, naming
them (a completion alone, a batch, a completing claim, a death, a cancel, a terminate);
while none does, completions send no notification at all."""
from __future__ import annotations

import time

import psycopg
import pytest

from jobq_core import Queue
from jobq_core.store.postgres.dialect import ENDED_CHANNEL


@pytest.fixture
def q(pg_url):
    with Queue(pg_url) as queue:
        queue.check()
        yield queue


def named(watch, job_ids: set[int], timeout: float = 10.0) -> set[int]:
    """The ids the watch's notifications named until all of ``job_ids`` were."""
    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    while not job_ids <= seen and time.monotonic() < deadline:
        if watch.wait(deadline - time.monotonic()):
            seen |= watch.ended() or set()
    return seen


def claimed(q: Queue, n: int) -> list:
    q.enqueue_many([("k", None)] * n)
    return [q.claim("w") for _ in range(n)]


def test_each_way_of_ending_a_job_names_it_to_a_watch_of_ended_jobs(q, pg_url):
    watch = q.store.watch_ends()
    try:
        watch.ended()  # what its first connection reported: look at everything
        one, = claimed(q, 1)
        q.complete(one.id, one.token, "r")
        assert one.id in named(watch, {one.id})
        batch = claimed(q, 3)
        q.complete_many([(j.id, j.token, None) for j in batch])
        assert {j.id for j in batch} <= named(watch, {j.id for j in batch})
        a, b = claimed(q, 2)
        q.enqueue("k")
        accepted, _ = q.complete_and_claim([(a.id, a.token, 1), (b.id, b.token, 2)], "w", 1)
        assert accepted == [True, True] and {a.id, b.id} <= named(watch, {a.id, b.id})
        dead, = claimed(q, 1)
        q.give_up(dead.id, dead.token, "no")
        assert dead.id in named(watch, {dead.id})
        pending = q.enqueue("k", delay=3600)
        q.cancel(pending)
        assert pending in named(watch, {pending})
        running, = claimed(q, 1)
        q.cancel(running.id, terminate=True)
        assert running.id in named(watch, {running.id})
    finally:
        watch.close()


def test_with_nobody_waiting_a_completion_sends_no_notification(q, pg_url):
    with psycopg.connect(pg_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {ENDED_CHANNEL}")
        job, = claimed(q, 1)
        q.complete(job.id, job.token)
        batch = claimed(q, 2)
        q.complete_many([(j.id, j.token, None) for j in batch])
        time.sleep(0.3)
        assert list(listener.notifies(timeout=0.2, stop_after=1)) == []
        watch = q.store.watch_ends()  # someone waits from now on
        try:
            job, = claimed(q, 1)
            q.complete(job.id, job.token)
            note, = listener.notifies(timeout=5, stop_after=1)
            assert note.payload == str(job.id)
        finally:
            watch.close()
