"""A poison job: one whose attempts keep ending with their worker lost (the reaper finds
the lease run out) goes dead after ``max_lost_attempts`` of them in a row (default 3),
read from the attempt history already recorded, instead of killing worker after worker
for all its attempts."""
from __future__ import annotations

import pytest


def _lose_worker(queue, clock, **reap) -> int:
    """A worker claims the job and dies: its lease runs out and the reaper takes it back."""
    assert queue.claim("w", lease=1) is not None
    clock.advance(2)
    moved = queue.reap(**reap)
    clock.advance(3600)  # past any backoff
    return moved


def test_a_job_that_lost_its_worker_three_times_in_a_row_goes_dead_as_poison(queue, clock):
    job_id = queue.enqueue("crash", max_attempts=20)
    for expected in ("pending", "pending", "dead"):
        assert _lose_worker(queue, clock) == 1
        assert queue.get(job_id).status == expected
    job = queue.get(job_id)
    assert job.attempts == 3 and job.error.startswith("poison job: its last 3 attempts")
    assert "--pool process" in job.error
    assert [a.outcome for a in queue.attempts(job_id)] == ["lease expired"] * 3
    assert queue.claim("w") is None


def test_an_attempt_that_ends_otherwise_breaks_the_run_of_lost_workers(queue, clock):
    job_id = queue.enqueue("crash", max_attempts=20)
    _lose_worker(queue, clock)
    _lose_worker(queue, clock)
    job = queue.claim("w")
    queue.fail(job.id, job.token, "ValueError: a plain failure", retry_in=0)
    _lose_worker(queue, clock)
    _lose_worker(queue, clock)
    assert queue.get(job_id).status == "pending"
    _lose_worker(queue, clock)
    assert queue.get(job_id).status == "dead" and queue.get(job_id).attempts == 6


@pytest.mark.parametrize(("limit", "dead_after"), [(1, 1), (2, 2), (5, 5)])
def test_the_number_of_lost_attempts_is_configurable(queue, clock, limit, dead_after):
    job_id = queue.enqueue("crash", max_attempts=20)
    for n in range(1, dead_after + 1):
        _lose_worker(queue, clock, max_lost_attempts=limit)
        assert queue.get(job_id).status == ("dead" if n == dead_after else "pending")


def test_zero_never_takes_a_job_for_poison(queue, clock):
    job_id = queue.enqueue("crash", max_attempts=6)
    for _ in range(5):
        _lose_worker(queue, clock, max_lost_attempts=0)
    assert queue.get(job_id).status == "pending"
    _lose_worker(queue, clock, max_lost_attempts=0)
    job = queue.get(job_id)
    assert job.status == "dead" and "poison" not in job.error  # out of attempts


def test_a_negative_limit_is_refused(queue):
    with pytest.raises(ValueError, match="max_lost_attempts"):
        queue.reap(max_lost_attempts=-1)
