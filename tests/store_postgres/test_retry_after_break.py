"""An operation whose connection broke while its commit was under way runs again with
``again=True`` (``Pool.run``). Here every operation is made to run twice, the second
time as such a retry after a first try that did commit: the retry must report what the
first try did (a completion accepted, a failure recorded) without writing twice, and an
enqueue, which cannot tell its jobs from others', must say so instead of adding them again."""
from __future__ import annotations

import pytest

from jobq_core import DatabaseUnavailable, LeaseLost


@pytest.fixture
def twice(pg_queue, monkeypatch):
    conns = pg_queue.store._conns
    real_run = conns.run

    def run_twice(op):
        real_run(op)  # the first try commits; its answer is lost with the connection
        return real_run(lambda c, _again: op(c, True))

    def arm():
        monkeypatch.setattr(conns, "run", run_twice)

    return arm


def test_a_completion_that_committed_is_accepted_once(pg_queue, twice):
    pg_queue.enqueue("k")
    job = pg_queue.claim("w")
    twice()
    pg_queue.complete(job.id, job.token, {"ok": 1})  # accepted, not LeaseLost
    assert pg_queue.get(job.id).result == {"ok": 1}


def test_a_batch_of_completions_that_committed_is_accepted(pg_queue, twice):
    pg_queue.enqueue_many([("k", i) for i in range(3)])
    jobs = pg_queue.claim_many("w", 3)
    twice()
    assert pg_queue.complete_many([(j.id, j.token, None) for j in jobs]) == [True] * 3


@pytest.mark.slow  # real processes or the real clock: seconds
def test_a_failure_that_committed_is_reported_once_with_one_attempt_row(pg_queue, twice):
    pg_queue.enqueue("k")
    job = pg_queue.claim("w")
    twice()
    after = pg_queue.fail(job.id, job.token, "boom")
    assert after.status == "pending"
    assert [a.outcome for a in pg_queue.attempts(job.id)] == ["failed"]


def test_a_release_that_committed_is_reported(pg_queue, twice):
    pg_queue.enqueue("k")
    job = pg_queue.claim("w")
    twice()
    pg_queue.release(job.id, job.token)
    assert pg_queue.get(job.id).status == "pending"


def test_a_stale_completion_is_still_fenced_out_on_a_retry(pg_queue, clock, twice):
    pg_queue.enqueue("k")
    old = pg_queue.claim("w", lease=1)
    clock.advance(5)
    pg_queue.reap()
    clock.advance(3600)  # past the retry's backoff
    new = pg_queue.claim("w2")
    twice()
    with pytest.raises(LeaseLost):
        pg_queue.complete(old.id, old.token)
    assert pg_queue.get(new.id).status == "running"


def test_an_enqueue_that_may_have_committed_says_so(pg_queue, twice):
    twice()
    with pytest.raises(DatabaseUnavailable, match="may or may not have been added"):
        pg_queue.enqueue("k")
