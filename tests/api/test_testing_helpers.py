"""jobq_core.testing: drain runs jobs in the test's thread, in order, with delays and
retries brought forward by a FakeClock; assert_enqueued and enqueued read what is
pending; Queue(":memory:") serves tests that need no second process."""
from __future__ import annotations

import os
import sqlite3
import threading

import pytest
from stores import BY_NAME, fresh_database
from stores.adapter import skip_or_fail

from jobq_core import (
    Backoff, JobStatus, Outcome, Queue, Registry, Snooze, UnusableConnection,
)
from jobq_core.testing import FakeClock, RunOutcome, assert_enqueued, drain, enqueued


@pytest.fixture(params=["memory", *BY_NAME])
def q(request, tmp_path):
    """A queue in memory, or on a database of each store of ``tests/stores``."""
    clock = FakeClock()
    if request.param == "memory":
        with Queue(":memory:", clock=clock) as queue:
            yield queue
        return
    adapter = BY_NAME[request.param]
    if why := adapter.unavailable():
        skip_or_fail(why)
    for database in fresh_database(adapter, tmp_path):
        with Queue(database, clock=clock) as queue:
            yield queue


def test_drain_runs_ready_jobs_in_claim_order_in_this_thread(q):
    r = Registry()
    threads = []

    @r.task("step")
    def step(n):
        threads.append(threading.current_thread())
        return n * 10

    ids = [q.enqueue("step", 1), q.enqueue("step", 2), q.enqueue("step", 3, priority=5)]
    ran = drain(q, r)
    assert ran == [
        RunOutcome(ids[2], "step", Outcome.SUCCEEDED, 30, None, 1, JobStatus.SUCCEEDED),
        RunOutcome(ids[0], "step", Outcome.SUCCEEDED, 10, None, 1, JobStatus.SUCCEEDED),
        RunOutcome(ids[1], "step", Outcome.SUCCEEDED, 20, None, 1, JobStatus.SUCCEEDED),
    ]
    assert set(threads) == {threading.current_thread()}
    assert q.get(ids[0]).result == 10 and q.count("pending") == 0


def test_drain_runs_jobs_that_handlers_enqueue(q):
    r = Registry()

    @r.task("countdown")
    def countdown(n):
        if n:
            q.enqueue("countdown", n - 1)
        return n

    q.enqueue("countdown", 3)
    assert [run.result for run in drain(q, r)] == [3, 2, 1, 0]


def test_without_a_clock_delayed_jobs_and_retries_stay_pending(q):
    r = Registry()
    r.task("boom", backoff=Backoff(base=60, cap=60))(lambda p: 1 / 0)
    r.task("later")(lambda p: None)
    q.enqueue("later", delay=300)
    failing = q.enqueue("boom")
    ran = drain(q, r)
    assert [(x.job_id, x.outcome, x.status) for x in ran] == [
        (failing, Outcome.FAILED, JobStatus.PENDING)]
    assert "ZeroDivisionError" in ran[0].error
    assert q.count("pending") == 2


def test_with_the_queues_fake_clock_drain_moves_time_to_delays_and_retries(q):
    r = Registry()
    start = q.clock.now()

    @r.task("flaky", max_attempts=3, backoff=Backoff(base=60, cap=60))
    def flaky(payload, ctx):
        if ctx.attempt < 3:
            raise RuntimeError(f"attempt {ctx.attempt}")
        return "third time"

    r.task("later")(lambda p: "later")
    q.enqueue("later", delay=3600)
    job_id = q.enqueue("flaky")
    ran = drain(q, r, clock=q.clock)
    assert [(x.kind, x.attempt, x.outcome, x.status) for x in ran] == [
        ("flaky", 1, Outcome.FAILED, JobStatus.PENDING),
        ("flaky", 2, Outcome.FAILED, JobStatus.PENDING),
        ("flaky", 3, Outcome.SUCCEEDED, JobStatus.SUCCEEDED),
        ("later", 1, Outcome.SUCCEEDED, JobStatus.SUCCEEDED),
    ]
    assert ran[2].result == "third time" and q.get(job_id).attempts == 3
    assert q.clock.now() >= start + 3600


def test_a_snoozed_job_runs_again_when_the_fake_clock_reaches_its_time(q):
    r = Registry()
    start = q.clock.now()

    @r.task("poll")
    def poll(payload, ctx):
        if q.clock.now() < start + 30:
            raise Snooze(30)
        return "ready"

    job_id = q.enqueue("poll")
    ran = drain(q, r, clock=q.clock)
    assert [(x.outcome, x.attempt, x.status) for x in ran] == [
        (Outcome.SNOOZED, 1, JobStatus.PENDING),
        (Outcome.SUCCEEDED, 1, JobStatus.SUCCEEDED),
    ]
    assert q.get(job_id).result == "ready" and q.clock.now() == start + 30


def test_a_job_out_of_attempts_ends_dead_and_an_unknown_kind_fails(q):
    r = Registry()
    r.task("boom", max_attempts=2)(lambda p: 1 / 0)
    dead = q.enqueue("boom")
    typo = q.enqueue("email.sned", max_attempts=1)
    ran = drain(q, r, clock=q.clock)
    by_job = {x.job_id: x for x in ran}
    assert [x.job_id for x in ran].count(dead) == 2
    assert by_job[dead].status is JobStatus.DEAD
    assert by_job[typo].status is JobStatus.DEAD and "no handler for kind 'email.sned'" in \
        by_job[typo].error


def test_async_handlers_run_too(q):
    r = Registry()

    @r.task("a")
    async def a(payload):
        return payload + 1

    q.enqueue("a", 41)
    assert drain(q, r)[0].result == 42


def test_drain_stops_at_max_jobs_and_leaves_the_rest_pending(q):
    r = Registry()

    @r.task("forever")
    def forever(payload):
        q.enqueue("forever")

    q.enqueue("forever")
    with pytest.raises(RuntimeError, match="ran 5 jobs"):
        drain(q, r, max_jobs=5)
    assert q.count("succeeded") == 5 and q.count("pending") == 1 and q.count("running") == 0


def test_drain_refuses_a_clock_that_is_not_the_queues(q):
    with pytest.raises(ValueError, match="queue's own clock"):
        drain(q, Registry(), clock=FakeClock())


def test_assert_enqueued_matches_kind_payload_queue_and_count(q):
    q.enqueue("email.send", {"to": "a"}, queue="mail")
    q.enqueue("email.send", {"to": "b"})
    q.enqueue("other")
    assert [j.payload for j in assert_enqueued(q, "email.send", count=2)] == [{"to": "a"},
                                                                              {"to": "b"}]
    assert_enqueued(q, "email.send", payload={"to": "a"}, queue="mail", count=1)
    with pytest.raises(AssertionError, match=r"expected 1 pending job\(s\) of kind "
                                             r"'email.send' with payload \{'to': 'c'\}"):
        assert_enqueued(q, "email.send", payload={"to": "c"}, count=1)
    with pytest.raises(AssertionError, match="in queue 'mail', found 0"):
        assert_enqueued(q, "email.send", payload={"to": "b"}, queue="mail")
    with pytest.raises(AssertionError, match="no pending 'nope' jobs"):
        assert_enqueued(q, "nope")
    assert [j.kind for j in enqueued(q)] == ["email.send", "email.send", "other"]
    assert enqueued(q, "missing") == []


def test_run_jobs_are_no_longer_enqueued(q):
    r = Registry()
    r.task("x")(lambda p: None)
    q.enqueue("x")
    drain(q, r)
    assert enqueued(q, "x") == []
    assert_enqueued(q, "x", count=0)


# -- Queue(":memory:") ---------------------------------------------------------------------

def test_an_in_memory_queue_writes_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with Queue(":memory:") as q:
        q.enqueue("k", {"big": "x" * 100_000})  # the big-payload table too
        assert q.get(1).payload == {"big": "x" * 100_000}
        q.check()
        assert q.describe()["path"] == ":memory:"
    assert os.listdir(tmp_path) == []


def test_two_in_memory_queues_are_two_databases():
    with Queue(":memory:") as a, Queue(":memory:") as b:
        a.enqueue("k")
        assert b.count() == 0


def test_an_in_memory_queue_cannot_be_read_only_or_take_an_application_connection():
    with pytest.raises(ValueError, match="in-memory database cannot be opened read-only"):
        Queue(":memory:", read_only=True)
    with Queue(":memory:") as q:
        conn = sqlite3.connect(":memory:")
        with pytest.raises(UnusableConnection, match="in-memory"):
            q.enqueue("k", conn=conn)
        conn.close()


def test_a_thread_pool_worker_runs_an_in_memory_queue():
    from jobq_core import Worker

    with Queue(":memory:") as q:
        r = Registry()
        r.task("double")(lambda p: p * 2)
        ids = [q.enqueue("double", i) for i in range(20)]
        Worker(q, r, concurrency=4).run(burst=True, handle_signals=False)
        assert [q.get(i).result for i in ids] == [i * 2 for i in range(20)]
