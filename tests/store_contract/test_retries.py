"""Failing, giving up, releasing: retries after backoff, dead jobs, and the attempt history."""
import pytest

from jobq_core import Backoff, LeaseLost


def test_a_failed_attempt_goes_back_to_pending_within_the_backoff_window(open_queue, clock):
    q = open_queue(backoff=Backoff(base=2.0, cap=100.0))
    job_id = q.enqueue("k", max_attempts=10)
    for attempt in range(1, 9):
        job = q.claim("w")
        assert job.attempts == attempt
        failed = q.fail(job.id, job.token, f"boom {attempt}")
        window = min(100.0, 2.0 * 2 ** (attempt - 1))
        assert failed.status == "pending" and failed.error == f"boom {attempt}"
        assert clock.now() <= failed.run_at <= clock.now() + window
        clock.set(failed.run_at)
    assert len(q.attempts(job_id)) == 8


def test_retry_in_overrides_the_backoff_and_zero_means_now(queue, clock):
    queue.enqueue("k")
    job = queue.claim("w")
    assert queue.fail(job.id, job.token, "later", retry_in=42).run_at == clock.now() + 42
    clock.advance(42)
    job = queue.claim("w")
    assert queue.fail(job.id, job.token, "now", retry_in=0).run_at == clock.now()
    assert queue.claim("w").attempts == 3
    with pytest.raises(ValueError):
        queue.fail(job.id, job.token, "x", retry_in=-1)


def test_a_job_goes_dead_when_its_attempts_are_used_up(queue, clock):
    job_id = queue.enqueue("k", max_attempts=3)
    for _ in range(3):
        job = queue.claim("w")
        last = queue.fail(job.id, job.token, "Traceback...\nValueError: nope", retry_in=0)
    assert last.status == "dead" and last.finished_at == clock.now() and last.attempts == 3
    assert queue.claim("w") is None
    history = queue.attempts(job_id)
    assert [(a.attempt, a.outcome) for a in history] == [(1, "failed"), (2, "failed"), (3, "failed")]
    assert history[-1].error == "Traceback...\nValueError: nope"


def test_the_reaper_counts_an_expired_lease_as_an_attempt_and_ends_poison_jobs_dead(queue, clock):
    job_id = queue.enqueue("k", max_attempts=2)
    for expected in ("pending", "dead"):
        assert queue.claim("w", lease=1) is not None
        clock.advance(2)
        assert queue.reap() == 1
        assert queue.get(job_id).status == expected
        clock.advance(3600)
    outcomes = [a.outcome for a in queue.attempts(job_id)]
    assert outcomes == ["lease expired", "lease expired"]
    assert "lease expired" in queue.get(job_id).error


def test_release_hands_the_job_back_without_counting_the_attempt(queue, clock):
    queue.enqueue("k", max_attempts=1)
    job = queue.claim("w")
    queue.release(job.id, job.token)
    back = queue.get(job.id)
    assert back.status == "pending" and back.attempts == 0 and back.run_at == clock.now()
    again = queue.claim("w")
    assert again.attempts == 1
    with pytest.raises(LeaseLost):
        queue.release(job.id, job.token)


def test_attempt_history_lists_every_attempt_including_the_running_and_the_successful_one(queue, clock):
    job_id = queue.enqueue("k")
    job = queue.claim("w1")
    queue.fail(job.id, job.token, "first failed", retry_in=0)
    job = queue.claim("w2")
    running = queue.attempts(job_id)
    assert [(a.attempt, a.worker, a.outcome) for a in running] == [
        (1, "w1", "failed"), (2, "w2", "running")]
    clock.advance(3)
    queue.complete(job.id, job.token)
    done = queue.attempts(job_id)
    assert [(a.attempt, a.outcome) for a in done] == [(1, "failed"), (2, "succeeded")]
    assert done[-1].ended_at - done[-1].started_at == 3


def test_give_up_ends_the_job_dead_at_once_and_a_retry_still_gets_the_full_allowance(queue):
    job_id = queue.enqueue("k", max_attempts=5)
    job = queue.claim("w")
    dead = queue.give_up(job.id, job.token, "no handler for kind 'k'")
    assert dead.status == "dead" and dead.attempts == 1 and dead.max_attempts == 5
    with pytest.raises(LeaseLost):
        queue.give_up(job.id, job.token, "again")
    queue.retry(job_id)
    assert queue.get(job_id).max_attempts == 5


def test_a_cancel_requested_job_that_fails_gives_up_or_is_released_ends_cancelled(queue, clock):
    ids = queue.enqueue_many([("k", i) for i in range(3)])
    jobs = queue.claim_many("w", 3)
    for job in jobs:
        queue.cancel(job.id)
    assert queue.fail(jobs[0].id, jobs[0].token, "stopped").status == "cancelled"
    assert queue.give_up(jobs[1].id, jobs[1].token, "stopped").status == "cancelled"
    queue.release(jobs[2].id, jobs[2].token)
    for job_id in ids:
        job = queue.get(job_id)
        assert (job.status, job.finished_at) == ("cancelled", clock.now())
        assert [a.outcome for a in queue.attempts(job_id)] == ["cancelled"]
    assert queue.claim("w") is None


def test_a_failure_that_exhausts_the_attempts_counts_in_the_attempt_history(queue):
    job_id = queue.enqueue("k", max_attempts=2)
    job = queue.claim("w")
    queue.release(job.id, job.token)  # not counted
    job = queue.claim("w")
    queue.fail(job.id, job.token, "first", retry_in=0)
    job = queue.claim("w")
    assert job.attempts == 2
    assert queue.fail(job.id, job.token, "second").status == "dead"
    history = queue.attempts(job_id)
    assert [(a.attempt, a.outcome, a.error) for a in history] == [
        (1, "released", None), (1, "failed", "first"), (2, "failed", "second")]
    assert len({a.token for a in history}) == 3  # one claim each


def test_an_expired_lease_is_recorded_with_its_moment_in_utc_and_an_age_not_raw_seconds(
        queue, clock):
    from jobq_core.presentation.display import timestamp

    queue.enqueue("k")
    job = queue.claim("w-9", lease=5)
    clock.advance(47)
    queue.reap()
    error = queue.attempts(job.id)[0].error
    assert error == (f"lease expired at {timestamp(job.lease_until)} (42s before it was "
                     "reaped) with no heartbeat from its worker; the attempt counts as failed")
    assert queue.attempts(job.id)[0].worker == "w-9"
    assert f"{job.lease_until:.3f}" not in error
