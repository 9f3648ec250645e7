"""Leases and fencing: a worker whose job was taken over gets LeaseLost and writes nothing;
heartbeats extend leases; the reaper rescues expired ones."""
import pytest

from jobq_core import LeaseLost


def _take_over(queue, clock, lease=10):
    """A first worker claims, stalls past its lease, and a second worker takes the job."""
    queue.enqueue("k", {"n": 1})
    zombie = queue.claim("zombie", lease=lease)
    clock.advance(lease + 1)
    assert queue.reap() == 1
    clock.advance(3600)  # past any backoff
    fresh = queue.claim("fresh", lease=lease)
    assert fresh.id == zombie.id
    return zombie, fresh


def test_complete_extend_and_fail_after_a_takeover_raise_lease_lost_and_change_nothing(queue, clock):
    zombie, fresh = _take_over(queue, clock)
    before = queue.get(fresh.id)
    with pytest.raises(LeaseLost):
        queue.complete(zombie.id, zombie.token, {"by": "zombie"})
    with pytest.raises(LeaseLost):
        queue.extend(zombie.id, zombie.token, lease=999)
    with pytest.raises(LeaseLost):
        queue.fail(zombie.id, zombie.token, "zombie error")
    with pytest.raises(LeaseLost):
        queue.progress(zombie.id, zombie.token, 0.5)
    with pytest.raises(LeaseLost):
        queue.release(zombie.id, zombie.token)
    assert queue.get(fresh.id) == before
    queue.complete(fresh.id, fresh.token, {"by": "fresh"})
    assert queue.get(fresh.id).result == {"by": "fresh"}


def test_the_zombie_cannot_complete_even_after_the_new_owner_finished(queue, clock):
    zombie, fresh = _take_over(queue, clock)
    queue.complete(fresh.id, fresh.token, "second")
    done = queue.get(fresh.id)
    with pytest.raises(LeaseLost):
        queue.complete(zombie.id, zombie.token, "first")
    assert queue.get(fresh.id) == done


def test_a_job_completes_only_once(queue):
    queue.enqueue("k")
    job = queue.claim("w")
    queue.complete(job.id, job.token, 1)
    with pytest.raises(LeaseLost):
        queue.complete(job.id, job.token, 2)
    assert queue.get(job.id).result == 1


def test_a_wrong_token_or_unknown_job_is_lease_lost(queue):
    queue.enqueue("k")
    job = queue.claim("w")
    with pytest.raises(LeaseLost):
        queue.complete(job.id, job.token + 1)
    with pytest.raises(LeaseLost):
        queue.complete(9999, job.token)
    assert queue.get(job.id).status == "running"


def test_extend_pushes_the_lease_and_keeps_the_job_from_the_reaper(queue, clock):
    queue.enqueue("k")
    job = queue.claim("w", lease=10)
    clock.advance(8)
    queue.extend(job.id, job.token, lease=10)
    assert queue.get(job.id).lease_until == clock.now() + 10
    assert queue.get(job.id).heartbeat_at == clock.now()
    clock.advance(8)
    assert queue.reap() == 0
    queue.complete(job.id, job.token)


def test_extend_many_reports_lost_leases_without_raising(queue, clock):
    queue.enqueue_many([("k", 1), ("k", 2)])
    a, b = queue.claim_many("w", 2, lease=5)
    queue.complete(b.id, b.token)
    result = queue.extend_many([(a.id, a.token), (b.id, b.token)], lease=5)
    assert result.lost == {b.id} and result.cancel_requested == set()
    assert queue.get(a.id).lease_until == clock.now() + 5


def test_a_reap_after_the_completion_leaves_the_completed_job_alone(queue, clock):
    queue.enqueue("k")
    job = queue.claim("w", lease=5)
    queue.complete(job.id, job.token, "done")
    done = queue.get(job.id)
    clock.advance(60)
    assert queue.reap() == 0
    assert queue.get(job.id) == done


def test_a_completion_after_the_reap_is_rejected_and_the_job_runs_again(queue, clock):
    queue.enqueue("k")
    job = queue.claim("w", lease=5)
    clock.advance(6)
    assert queue.reap() == 1
    reaped = queue.get(job.id)
    with pytest.raises(LeaseLost):
        queue.complete(job.id, job.token, "late")
    assert queue.get(job.id) == reaped
    assert reaped.status == "pending" and reaped.attempts == 1
    assert [a.outcome for a in queue.attempts(job.id)] == ["lease expired"]


def test_reap_does_not_touch_a_job_whose_lease_has_not_run_out(queue, clock):
    queue.enqueue("k")
    job = queue.claim("w", lease=5)
    clock.advance(5)  # exactly at the deadline: still ours
    assert queue.reap() == 0
    assert queue.get(job.id).status == "running"


def test_reapers_on_two_queue_objects_rescue_each_job_once(open_queue, clock):
    a, b = open_queue(), open_queue()
    a.enqueue_many([("k", i) for i in range(50)])
    a.claim_many("w", 50, lease=1)
    clock.advance(2)
    assert a.reap() + b.reap() == 50
    assert all(len(a.attempts(j.id)) == 1 for j in a.list(limit=100))


def test_a_store_reports_a_fenced_out_write_instead_of_raising(queue, store, clock):
    from jobq_core.store.base import Completion

    queue.enqueue("k")
    job = queue.claim("w")
    stale = job.token + 1
    now = clock.now()
    assert store.job_complete_many([Completion(job.id, stale, None)], now) == [False]
    assert store.job_fail(job.id, stale, "x", now, lambda n: 0.0) is None
    assert store.job_give_up(job.id, stale, "x", now) is None
    assert store.job_release(job.id, stale, now) is False
    assert store.job_progress(job.id, stale, 0.5, "half") is False
    assert store.job_extend_many([(job.id, stale)], now, now + 60).lost == {job.id}
    assert queue.get(job.id) == job  # nothing was written
    assert queue.attempts(job.id)[-1].outcome == "running"


def test_complete_many_accepts_each_live_claim_and_reports_each_stale_one(queue, clock):
    queue.enqueue_many([("k", i) for i in range(3)])
    a, b, c = queue.claim_many("w", 3, lease=10)
    queue.fail(b.id, b.token, "failed first", retry_in=60)
    assert queue.complete_many([(a.id, a.token, {"n": 1}), (b.id, b.token, "late"),
                                (c.id, c.token, None)]) == [True, False, True]
    assert (queue.get(a.id).status, queue.get(a.id).result) == ("succeeded", {"n": 1})
    assert (queue.get(a.id).finished_at, queue.get(c.id).result) == (clock.now(), None)
    assert (queue.get(b.id).status, queue.get(b.id).result) == ("pending", None)
    assert queue.complete_many([]) == []
    with pytest.raises(ValueError, match="result is not JSON-serializable"):
        queue.complete_many([(b.id, b.token, float("nan"))])


def test_progress_is_stored_on_the_running_job_and_cleared_by_the_next_claim(queue):
    queue.enqueue("k")
    job = queue.claim("w", lease=5)
    queue.progress(job.id, job.token, 0.25, "step 1 of 4")
    assert (queue.get(job.id).progress, queue.get(job.id).progress_message) == (
        0.25, "step 1 of 4")
    queue.progress(job.id, job.token, None, "no fraction, just words")
    assert (queue.get(job.id).progress, queue.get(job.id).progress_message) == (
        None, "no fraction, just words")
    for bad in (-0.1, 1.5, "half"):
        with pytest.raises(ValueError, match="between 0 and 1"):
            queue.progress(job.id, job.token, bad)
    queue.progress(job.id, job.token, 1, "done")
    queue.release(job.id, job.token)
    again = queue.claim("w")
    assert (again.progress, again.progress_message) == (None, None)


def test_a_cancel_requested_job_whose_lease_expires_is_reaped_as_cancelled(queue, clock):
    job_id = queue.enqueue("k", max_attempts=5)
    queue.claim("w", lease=5)
    queue.cancel(job_id)
    clock.advance(6)
    assert queue.reap() == 1
    job = queue.get(job_id)
    assert job.status == "cancelled" and job.finished_at == clock.now()
    assert [a.outcome for a in queue.attempts(job_id)] == ["lease expired"]
