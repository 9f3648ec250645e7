"""Stopping a running job (``Queue.cancel(id, terminate=True)``) on every store: the job
ends cancelled at once with its attempt recorded, the run is fenced out of any later
write, and its worker stops it within about a second: a process-pool child is killed and
replaced (the next job runs), an ``async def`` handler is cancelled on its loop, a sync
handler on a thread is told through ``ctx.cancelled``. A plain cancel reaches a running
handler as soon."""
from __future__ import annotations

import os
import time

import pytest
from proctree import alive

from jobq_core import LeaseLost, Outcome, Queue, Worker
from jobq_core.testing import wait_for

from .conftest import start
from .wait_tasks import registry

STOPPED_WITHIN = 2.0  # seconds from the terminate to the handler stopped


def running_pid(queue: Queue, job_id: int) -> int:
    """The pid the running handler reported (``wait_tasks._tell_pid``)."""
    job = wait_for(lambda: (j := queue.get(job_id)).progress_message and j)
    return int(job.progress_message)


@pytest.fixture
def process_worker(db):
    with Queue(db) as q:
        w = Worker(q, registry, concurrency=1, pool="process")
        t = start(w)
        yield w
        w.stop()
        t.join(15)


def test_terminate_ends_a_running_job_cancelled_with_its_attempt_and_fences_its_run(queue):
    job_id = queue.enqueue("nap", 60)
    job = queue.claim("w")
    assert queue.cancel(job_id, terminate=True) == "cancelled"
    ended = queue.get(job_id)
    assert (ended.status, ended.token, ended.attempts) == ("cancelled", None, 1)
    assert "terminated" in ended.error
    attempt, = queue.attempts(job_id)
    assert (attempt.attempt, attempt.outcome, attempt.token) == (1, Outcome.CANCELLED, job.token)
    with pytest.raises(LeaseLost):  # the terminated run's late completion is refused
        queue.complete(job.id, job.token, "late")
    with pytest.raises(LeaseLost):
        queue.extend(job.id, job.token)
    assert queue.get(job_id).status == "cancelled"
    assert queue.check_leases([(job.id, job.token)]).lost == {job_id}


def test_terminate_of_a_pending_job_cancels_it_and_of_a_finished_one_is_refused(queue):
    pending = queue.enqueue("echo")
    assert queue.cancel(pending, terminate=True) == "cancelled"
    with pytest.raises(Exception, match="already cancelled"):
        queue.cancel(pending, terminate=True)


def test_check_leases_reports_lost_runs_and_asked_cancels_without_writing(queue):
    a, b, c = (queue.enqueue("echo") for _ in range(3))
    ja, jb, jc = (queue.claim("w") for _ in range(3))
    queue.cancel(b)  # plain: flagged
    found = queue.check_leases([(a, ja.token), (b, jb.token), (c, jc.token + 1)])
    assert (found.lost, found.cancel_requested) == ({c}, {b})
    assert queue.get(a).lease_until == ja.lease_until  # nothing extended
    assert queue.check_leases([]).lost == frozenset()


@pytest.mark.slow
def test_a_terminated_cpu_bound_child_is_killed_and_replaced_and_the_next_job_runs(
        db, producer, process_worker):
    job_id = producer.enqueue("spin", 60)
    pid = running_pid(producer, job_id)
    started = time.monotonic()
    assert producer.cancel(job_id, terminate=True) == "cancelled"
    wait_for(lambda: not alive(pid), timeout=STOPPED_WITHIN)
    assert time.monotonic() - started < STOPPED_WITHIN
    after = producer.enqueue("echo", "next")
    assert producer.wait(after, timeout=20).result == {"echo": "next"}
    job = producer.get(job_id)
    assert (job.status, job.result) == ("cancelled", None)
    assert [a.outcome for a in producer.attempts(job_id)] == [Outcome.CANCELLED]
    # the pool lists the killed child (stopping) until its watcher has seen it go
    wait_for(lambda: [c[0] for c in process_worker._executor.pool.children()] not in (
        [], [pid]) and len(process_worker._executor.pool.children()) == 1, timeout=10)
    assert process_worker.counts["cancelled"] == 1


@pytest.mark.slow
def test_a_terminated_async_handler_is_cancelled_on_its_loop(db, producer, tmp_path,
                                                               monkeypatch):
    cancelled = tmp_path / "cancelled"
    monkeypatch.setenv("JOBQ_TEST_CANCELLED", str(cancelled))
    with Queue(db) as q:
        w = Worker(q, registry, concurrency=2)
        t = start(w)
        try:
            job_id = producer.enqueue("asleep", 60)
            running_pid(producer, job_id)
            started = time.monotonic()
            producer.cancel(job_id, terminate=True)
            wait_for(lambda: cancelled.exists() and cancelled.read_text() == f"{job_id}\n",
                     timeout=STOPPED_WITHIN)
            assert time.monotonic() - started < STOPPED_WITHIN
            assert producer.wait(producer.enqueue("echo", 1), timeout=10).status == "succeeded"
        finally:
            w.stop()
            t.join(10)
    assert producer.get(job_id).status == "cancelled"
    assert w.counts["cancelled"] == 1


@pytest.mark.slow
@pytest.mark.parametrize("terminate", [True, False])
def test_a_sync_handler_on_a_thread_is_told_within_a_second(db, producer, terminate):
    """A thread cannot be stopped: its handler is told (``ctx.cancelled``), as for a plain
    cancel, which now reaches it as soon (and which leaves the outcome to the handler:
    this one returns when told, and succeeds)."""
    with Queue(db) as q:
        w = Worker(q, registry, concurrency=1)
        t = start(w)
        try:
            job_id = producer.enqueue("nap", 60)
            assert running_pid(producer, job_id) == os.getpid()
            started = time.monotonic()
            producer.cancel(job_id, terminate=terminate)
            job = producer.wait(job_id, timeout=10)
            assert time.monotonic() - started < STOPPED_WITHIN
        finally:
            w.stop()
            t.join(10)
    if terminate:
        assert job.status == "cancelled"
        assert [a.outcome for a in producer.attempts(job_id)] == [Outcome.CANCELLED]
    else:
        assert (job.status, job.result) == ("succeeded", "woke")


def test_terminating_a_job_cancels_the_jobs_waiting_on_it(queue):
    parent = queue.enqueue("nap", 60)
    child = queue.enqueue("echo", after=[parent])
    queue.claim("w")
    queue.cancel(parent, terminate=True)
    job = queue.get(child)
    assert job.status == "cancelled" and f"dependency {parent} ended cancelled" in job.error
