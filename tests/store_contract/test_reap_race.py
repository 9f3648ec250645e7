"""A worker completing jobs whose leases ran out, and a reaper in another Queue, in both
orders: whichever commits first wins whole, and the other changes nothing.

Deterministic: the clock is a FakeClock and the two sides take turns, so every job is in
exactly the state the test says, with no timing luck (each side is one transaction, so any
real interleaving is one of these two orders)."""
import pytest

from jobq_core import Backoff, LeaseLost

JOBS = 30


@pytest.fixture
def expired(open_queue, clock):
    """A worker's Queue holding JOBS claims whose 5 s leases ran out a second ago, and a
    reaper's Queue on the same database whose reaped jobs wait a minute."""
    worker, reaper = open_queue(), open_queue(backoff=Backoff(base=60, cap=60))
    ids = worker.enqueue_many([("k", i) for i in range(JOBS)])
    claims = worker.claim_many("w", JOBS, lease=5)
    assert [c.id for c in claims] == ids
    clock.advance(6)
    return worker, reaper, claims


def test_a_completion_before_the_reaper_wins_and_the_reaper_leaves_the_job_alone(expired):
    worker, reaper, claims = expired
    early, late = claims[:10], claims[10:]
    for c in early:  # past the lease, but nobody took the job yet: still ours
        worker.complete(c.id, c.token, "done")
    assert reaper.reap() == len(late)
    for c in late:
        with pytest.raises(LeaseLost):
            worker.complete(c.id, c.token, "done")

    for c in early:  # the completion won whole
        job = worker.get(c.id)
        assert (job.status, job.token, job.result) == ("succeeded", c.token, "done")
        assert [(a.token, a.outcome) for a in worker.attempts(c.id)] == [(c.token, "succeeded")]
    for c in late:  # the reaper won whole; the late completion wrote nothing
        job = worker.get(c.id)
        assert (job.status, job.token, job.result, job.attempts) == ("pending", None, None, 1)
        assert [(a.token, a.outcome) for a in worker.attempts(c.id)] == [
            (c.token, "lease expired")]
    assert worker.count(status="succeeded") == 10
    assert worker.count(status="pending") == JOBS - 10


def test_after_the_reaper_wins_a_later_claim_gets_a_new_token_and_the_old_one_stays_out(
        expired, clock):
    worker, reaper, claims = expired
    assert reaper.reap() == JOBS
    clock.advance(61)  # past the reaper's backoff
    again = {j.id: j for j in reaper.claim_many("w2", JOBS, lease=5)}
    assert set(again) == {c.id for c in claims}
    for c in claims:
        assert again[c.id].token != c.token and again[c.id].attempts == 2
        with pytest.raises(LeaseLost):
            worker.complete(c.id, c.token, "stale")
        with pytest.raises(LeaseLost):
            worker.extend(c.id, c.token)
    accepted = reaper.complete_many([(j.id, j.token, "fresh") for j in again.values()])
    assert accepted == [True] * JOBS
    assert {worker.get(c.id).result for c in claims} == {"fresh"}
    assert reaper.reap() == 0  # a finished job is never reaped
