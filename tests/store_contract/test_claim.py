"""Claiming: which job comes next, in batches, per queue, under a lease and a fresh token."""
import threading

import pytest

from jobq_core import JobStatus
from jobq_core.store.base import NewJob


def test_claim_takes_the_highest_priority_then_earliest_run_at_then_lowest_id(queue, clock):
    late = queue.enqueue("k", "late", run_at=clock.now() - 1)
    early = queue.enqueue("k", "early", run_at=clock.now() - 2)
    same_a = queue.enqueue("k", "same-a", run_at=clock.now() - 1)
    urgent = queue.enqueue("k", "urgent", priority=10)
    low = queue.enqueue("k", "low", priority=-5, run_at=clock.now() - 100)
    order = [queue.claim("w").id for _ in range(5)]
    assert order == [urgent, early, late, same_a, low]
    assert queue.claim("w") is None


def test_claim_never_returns_a_job_that_is_not_due_yet(queue, clock):
    job_id = queue.enqueue("k", delay=30)
    assert queue.claim("w") is None
    clock.advance(29.999)
    assert queue.claim("w") is None
    clock.advance(0.001)
    assert queue.claim("w").id == job_id


def test_claim_grants_a_lease_a_fresh_token_and_counts_the_attempt(queue, clock):
    queue.enqueue("k", {"a": 1})
    job = queue.claim("worker-1", lease=12.5)
    assert job.status == JobStatus.RUNNING == "running"
    assert job.attempts == 1
    assert job.worker == "worker-1"
    assert job.lease_until == clock.now() + 12.5
    assert job.started_at == clock.now()
    assert isinstance(job.token, int)
    assert job.payload == {"a": 1}
    assert queue.get(job.id) == job


def test_claim_many_takes_up_to_the_limit_in_order_each_with_its_own_token(queue):
    ids = queue.enqueue_many([("k", i) for i in range(5)])
    jobs = queue.claim_many("w", 3)
    assert [j.id for j in jobs] == ids[:3]
    assert len({j.token for j in jobs}) == 3
    assert [j.id for j in queue.claim_many("w", 10)] == ids[3:]
    assert queue.claim_many("w", 10) == []


def test_a_new_claim_of_the_same_job_gets_a_different_token(queue, clock):
    queue.enqueue("k")
    first = queue.claim("w", lease=1)
    clock.advance(2)
    queue.reap()
    clock.advance(3600)
    second = queue.claim("w")
    assert second.id == first.id and second.token != first.token and second.attempts == 2


def test_claim_only_looks_at_the_named_queues(queue):
    mail = queue.enqueue("k", queue="mail")
    report = queue.enqueue("k", queue="reports", priority=9)
    other = queue.enqueue("k", queue="other", priority=5)
    assert queue.claim("w", queues=["nothing"]) is None
    assert queue.claim("w", queues=["mail"]).id == mail
    queue.enqueue("k", queue="mail")
    # across several queues, the global order still holds
    assert [j.id for j in queue.claim_many("w", 5, queues=["mail", "reports"])][0] == report
    assert queue.claim("w", queues="other").id == other


@pytest.mark.parametrize("kwargs, error", [
    ({"worker_id": ""}, ValueError),
    ({"lease": 0}, ValueError),
    ({"lease": -1}, ValueError),
    ({"queues": [""]}, ValueError),
])
def test_bad_claim_arguments_are_refused(queue, kwargs, error):
    job_id = queue.enqueue("k")
    args = {"worker_id": "w", **kwargs}
    with pytest.raises(error):
        queue.claim(args.pop("worker_id"), **args)
    assert queue.get(job_id).status == "pending"


def test_complete_and_claim_finishes_a_batch_and_takes_the_next_in_one_go(queue, clock):
    ids = queue.enqueue_many([("k", i) for i in range(5)])
    a = queue.claim("w", lease=60)
    b = queue.claim("w", lease=1)
    clock.advance(2)
    assert queue.reap() == 1  # b's lease ran out: its completion will be fenced out
    accepted, jobs = queue.complete_and_claim(
        [(a.id, a.token, "done"), (b.id, b.token, "stale")], "w", 2)
    assert accepted == [True, False]
    assert queue.get(a.id).result == "done" and queue.get(b.id).result is None
    assert [j.id for j in jobs] == ids[2:4]  # b waits out its backoff
    accepted, more = queue.complete_and_claim([(j.id, j.token, "ok") for j in jobs], "w", 0)
    assert accepted == [True, True] and more == []


def test_two_queues_claiming_at_once_never_get_the_same_job(open_queue):
    first, second = open_queue(), open_queue()
    ids = first.enqueue_many([("k", i) for i in range(400)])
    claimed: dict[str, list[int]] = {"a": [], "b": []}
    go = threading.Barrier(2)

    def drain(q, name):
        go.wait()
        while jobs := q.claim_many(name, 3):
            claimed[name] += [j.id for j in jobs]

    threads = [threading.Thread(target=drain, args=(q, name))
               for q, name in ((first, "a"), (second, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(claimed["a"] + claimed["b"]) == ids  # each job exactly once
    assert first.count(status="running") == 400


def test_the_store_takes_the_time_from_its_caller_and_reads_no_clock(store):
    new = NewJob("k", "null", "default", 0, 500.0, 3, None)
    job_id = store.job_insert_many([new], now=400.0)[0]
    job = store.job_get(job_id)
    assert (job.created_at, job.run_at) == (400.0, 500.0)
    assert store.job_claim("w", None, 499.0, 530.0, 1) == []  # not due at 499
    claimed = store.job_claim("w", None, 500.0, 530.0, 1)[0]
    assert (claimed.id, claimed.started_at, claimed.lease_until) == (job_id, 500.0, 530.0)


def test_a_claim_stores_the_lower_of_a_jobs_attempt_limit_and_its_kinds(queue, clock):
    queue.enqueue("email.send", max_attempts=20)
    queue.enqueue("email.send", max_attempts=2)
    queue.enqueue("report", max_attempts=20)
    limits = {"email.send": 3, "never.seen": 1}
    jobs = queue.claim_many("w", 2, attempt_limits=limits)
    jobs += queue.complete_and_claim([], "w", 5, attempt_limits=limits)[1]
    assert [(j.kind, j.max_attempts) for j in jobs] == [
        ("email.send", 3), ("email.send", 2), ("report", 20)]
    assert [queue.get(j.id).max_attempts for j in jobs] == [3, 2, 20]
    clock.advance(31)
    queue.reap()  # the reaper applies the stored limit: 1 of 3 used, back to pending
    assert queue.get(jobs[0].id).status == "pending"
    with pytest.raises(ValueError):
        queue.claim_many("w", 1, attempt_limits={"email.send": 0})


def test_next_run_at_is_when_the_earliest_waiting_job_of_the_named_queues_becomes_ready(
        queue, clock):
    now = clock.now()
    assert queue.next_run_at() is None
    queue.enqueue("k", queue="a")  # ready now: not waiting
    queue.enqueue("k", queue="a", priority=5, delay=30)
    queue.enqueue("k", queue="b", priority=-1, delay=10)
    queue.enqueue("k", queue="a", delay=20)
    assert queue.next_run_at() == now + 10
    assert queue.next_run_at(queues=["a"]) == now + 20
    assert queue.next_run_at(queues="b") == now + 10
    assert queue.next_run_at(queues=["a", "c"]) == now + 20
    assert queue.next_run_at(queues=["c"]) is None
    clock.advance(10)  # b's job is ready now: the next one to wait for is a's
    assert queue.next_run_at() == now + 20


def test_next_run_at_counts_only_pending_jobs(queue, clock):
    job_id = queue.enqueue("k", delay=5)
    queue.enqueue("k", delay=50)
    clock.advance(5)
    job = queue.claim("w")
    assert job.id == job_id
    queue.fail(job.id, job.token, "boom", retry_in=7)  # a retry waits too
    assert queue.next_run_at() == clock.now() + 7
    job = queue.get(job_id)
    queue.cancel(job_id)
    assert queue.next_run_at() == clock.now() + 45
