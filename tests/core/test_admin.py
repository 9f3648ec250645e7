import pytest

from jobq_core import InvalidState, JobNotFound


def _dead_job(queue, kind="k", error="boom", queue_name="default"):
    job_id = queue.enqueue(kind, queue=queue_name, max_attempts=1)
    job = queue.claim("w", queues=[queue_name])
    queue.fail(job.id, job.token, error)
    assert queue.get(job_id).status == "dead"
    return job_id


def test_retry_brings_a_dead_job_back_runnable_now_with_a_fresh_allowance(queue, clock):
    job_id = _dead_job(queue)
    clock.advance(5)
    queue.retry(job_id)
    job = queue.get(job_id)
    assert job.status == "pending" and job.attempts == 0 and job.run_at == clock.now()
    assert job.finished_at is None
    claimed = queue.claim("w")
    assert claimed.id == job_id and claimed.attempts == 1


def test_retry_refuses_a_job_that_is_not_dead_or_cancelled(queue):
    job_id = queue.enqueue("k")
    with pytest.raises(InvalidState, match="pending"):
        queue.retry(job_id)
    with pytest.raises(JobNotFound, match="no job with id 999"):
        queue.retry(999)


def test_retry_dead_retries_only_what_matches_the_filter(queue):
    a = _dead_job(queue, kind="mail", error="SMTP timeout")
    b = _dead_job(queue, kind="mail", error="bad address")
    c = _dead_job(queue, kind="report", error="SMTP timeout", queue_name="reports")
    assert queue.retry_dead(kind="mail", error_contains="SMTP") == 1
    assert [queue.get(i).status for i in (a, b, c)] == ["pending", "dead", "dead"]
    assert queue.retry_dead(queue="reports") == 1
    assert queue.retry_dead() == 1
    assert queue.get(b).status == "pending"


def test_retry_leaves_a_job_dead_when_its_unique_key_is_live_again(queue):
    job_id = queue.enqueue("k", unique_key="u", max_attempts=1)
    job = queue.claim("w")
    queue.fail(job.id, job.token, "x")
    queue.enqueue("k", unique_key="u")
    with pytest.raises(InvalidState, match="unique key"):
        queue.retry(job_id)
    assert queue.retry_dead() == 0
    assert queue.get(job_id).status == "dead"


def test_cancel_ends_a_pending_job_at_once(queue, clock):
    job_id = queue.enqueue("k")
    assert queue.cancel(job_id) == "cancelled"
    job = queue.get(job_id)
    assert job.status == "cancelled" and job.finished_at == clock.now()
    assert queue.claim("w") is None
    with pytest.raises(InvalidState, match="already cancelled"):
        queue.cancel(job_id)
    queue.retry(job_id)
    assert queue.get(job_id).status == "pending"


def test_cancel_flags_a_running_job_and_its_next_heartbeat_reports_it(queue):
    queue.enqueue("k")
    job = queue.claim("w")
    assert queue.cancel(job.id) == "running"
    assert queue.get(job.id).cancel_requested
    beat = queue.extend_many([(job.id, job.token)])
    assert beat.cancel_requested == {job.id} and beat.lost == set()
    ended = queue.fail(job.id, job.token, "stopped on request")
    assert ended.status == "cancelled"
    assert queue.attempts(job.id)[-1].outcome == "cancelled"


def test_a_cancelled_running_job_that_finishes_anyway_counts_as_succeeded(queue):
    queue.enqueue("k")
    job = queue.claim("w")
    queue.cancel(job.id)
    queue.complete(job.id, job.token, "done anyway")
    assert queue.get(job.id).status == "succeeded"


def test_cancel_of_a_missing_job_is_an_error(queue):
    with pytest.raises(JobNotFound):
        queue.cancel(42)


def test_prune_deletes_old_finished_jobs_and_their_history_but_never_live_ones(queue, clock):
    dead = _dead_job(queue)
    ok_id = queue.enqueue("k")
    job = queue.claim("w")
    queue.complete(job.id, job.token)
    pending = queue.enqueue("k")
    running = queue.enqueue("k")
    queue.claim("w")
    clock.advance(100)
    recent = queue.enqueue("k")
    job = queue.claim("w")
    queue.complete(job.id, job.token)
    assert queue.prune(older_than=50) == 2
    assert queue.get(dead) is None and queue.get(ok_id) is None
    assert queue.attempts(dead) == []
    assert {queue.get(i).status for i in (pending, running, recent)} == {
        "pending", "running", "succeeded"}
    with pytest.raises(ValueError):
        queue.prune(older_than=-1)


def test_list_filters_and_orders_jobs(queue, clock):
    a = queue.enqueue("mail", queue="m")
    b = queue.enqueue("mail", queue="m", priority=3)
    c = queue.enqueue("report", queue="r", delay=60)
    assert [j.id for j in queue.list()] == [c, b, a]
    assert [j.id for j in queue.list(status="pending")] == [b, a, c]
    assert [j.id for j in queue.list(status="scheduled")] == [c]
    assert [j.id for j in queue.list(kind="mail", limit=1)] == [b]  # newest first
    assert [j.id for j in queue.list(queue="r")] == [c]
    with pytest.raises(ValueError, match="unknown status 'bogus'"):
        queue.list(status="bogus")


def test_a_listing_can_leave_payloads_and_results_unread(queue):
    job_id = queue.enqueue("k", {"big": "x" * 5000})
    job = queue.claim("w")
    queue.complete(job.id, job.token, {"r": 1})
    lean = queue.list(payloads=False)[0]
    assert lean.id == job_id and lean.payload is None and lean.result is None
    assert lean.status == "succeeded" and lean.kind == "k"
    full = queue.list()[0]
    assert full.payload == {"big": "x" * 5000} and full.result == {"r": 1}
