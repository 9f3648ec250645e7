"""Operators' verbs: retry, retry_dead, cancel, prune; and reading: get, list, count."""
import pytest

from jobq_core import InvalidState, JobNotFound

from .helpers import dead_job, succeeded_job


def test_retry_brings_a_dead_job_back_runnable_now_with_a_fresh_allowance(queue, clock):
    job_id = dead_job(queue)
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
    a = dead_job(queue, kind="mail", error="SMTP timeout")
    b = dead_job(queue, kind="mail", error="bad address")
    c = dead_job(queue, kind="report", error="SMTP timeout", queue_name="reports")
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
    dead = dead_job(queue)
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


def test_prune_can_keep_dead_jobs_count_first_and_says_how_many_of_each_status(queue, clock):
    dead = dead_job(queue)
    queue.cancel(cancelled := queue.enqueue("k"))
    for _ in range(2):
        queue.enqueue("k")
        job = queue.claim("w")
        queue.complete(job.id, job.token)
    queue.enqueue("k")  # the newest job: never pruned
    clock.advance(100)
    assert queue.prune_by_status(50, dry_run=True) == {
        "succeeded": 2, "dead": 1, "cancelled": 1}
    assert queue.prune_by_status(50, dead=False, dry_run=True) == {
        "succeeded": 2, "cancelled": 1}
    assert queue.get(cancelled) is not None  # a dry run deletes nothing
    assert queue.prune_by_status(50, dead=False) == {"succeeded": 2, "cancelled": 1}
    assert queue.get(dead).status == "dead" and queue.attempts(dead)
    assert queue.prune(50) == 1
    assert queue.get(dead) is None


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


def test_retry_refuses_a_running_or_succeeded_job_and_leaves_it_as_it_was(queue):
    done = succeeded_job(queue, result="kept")
    queue.enqueue("k")
    running = queue.claim("w")
    for job_id, status in ((running.id, "running"), (done, "succeeded")):
        before = queue.get(job_id)
        with pytest.raises(InvalidState, match=status):
            queue.retry(job_id)
        assert queue.get(job_id) == before


def test_retry_dead_leaves_cancelled_jobs_alone(queue):
    cancelled = queue.enqueue("k")
    queue.cancel(cancelled)
    dead = dead_job(queue)
    assert queue.retry_dead() == 1
    assert (queue.get(cancelled).status, queue.get(dead).status) == ("cancelled", "pending")


def test_cancel_refuses_a_job_that_already_succeeded_or_died(queue):
    done = succeeded_job(queue)
    dead = dead_job(queue)
    with pytest.raises(InvalidState, match="already succeeded"):
        queue.cancel(done)
    with pytest.raises(InvalidState, match="already dead"):
        queue.cancel(dead)
    assert (queue.get(done).status, queue.get(dead).status) == ("succeeded", "dead")


def test_a_missing_job_reads_as_none_with_no_attempts(queue):
    queue.enqueue("k")
    assert queue.get(999) is None
    assert queue.attempts(999) == []


def test_prune_keeps_the_newest_job_even_when_it_finished_long_ago(queue, clock):
    older = succeeded_job(queue)
    newest = dead_job(queue)
    clock.advance(86400)
    assert queue.prune(older_than=60) == 1
    assert queue.get(older) is None
    assert queue.get(newest).status == "dead"
    assert queue.enqueue("k") > newest  # so no id is handed out twice


def test_prune_deletes_only_what_finished_before_the_cutoff(queue, clock):
    old = succeeded_job(queue)
    clock.advance(100)
    young = succeeded_job(queue)
    queue.enqueue("k")  # the newest job, never pruned
    clock.advance(10)
    assert queue.prune(older_than=50) == 1
    assert queue.get(old) is None and queue.get(young).status == "succeeded"
    assert queue.prune(older_than=50) == 0


def test_list_filters_by_worker_and_by_error_text(queue):
    a = dead_job(queue, error="SMTP timeout after 30 s")
    b = dead_job(queue, error="bad address")
    queue.enqueue_many([("k", 1), ("k", 2)])
    running_a = queue.claim("alice")
    running_b = queue.claim("bob")
    assert [j.id for j in queue.list(worker="alice")] == [running_a.id]
    assert [j.id for j in queue.list(worker="bob", status="running")] == [running_b.id]
    assert [j.id for j in queue.list(error_contains="SMTP")] == [a]
    assert [j.id for j in queue.list(status="dead", error_contains="address")] == [b]
    assert queue.list(error_contains="no such text") == []


def test_list_orders_each_status_as_the_contract_says(queue, clock):
    # running: by lease end
    queue.enqueue_many([("k", i) for i in range(3)])
    long = queue.claim("w", lease=60)
    short = queue.claim("w", lease=5)
    mid = queue.claim("w", lease=30)
    assert [j.id for j in queue.list(status="running")] == [short.id, mid.id, long.id]
    # retrying and scheduled: by run_at
    queue.fail(long.id, long.token, "x", retry_in=50)
    queue.fail(short.id, short.token, "x", retry_in=20)
    assert [j.id for j in queue.list(status="retrying")] == [short.id, long.id]
    later = queue.enqueue("k", delay=40)
    assert [j.id for j in queue.list(status="scheduled")] == [short.id, later, long.id]
    # finished: the most recently finished first, whatever the id
    queue.complete(mid.id, mid.token)
    clock.advance(1)
    first = succeeded_job(queue)
    assert [j.id for j in queue.list(status="succeeded")] == [first, mid.id]
    # no status: newest job first
    assert [j.id for j in queue.list()] == sorted((j.id for j in queue.list()), reverse=True)
    assert queue.list()[0].id == first


def test_list_pages_through_jobs_with_limit_and_offset(queue):
    ids = queue.enqueue_many([("k", i) for i in range(7)])
    newest_first = ids[::-1]
    assert [j.id for j in queue.list(limit=3)] == newest_first[:3]
    assert [j.id for j in queue.list(limit=3, offset=3)] == newest_first[3:6]
    assert [j.id for j in queue.list(limit=3, offset=6)] == newest_first[6:]
    assert queue.list(limit=0) == []
    with pytest.raises(ValueError):
        queue.list(offset=-1)


def test_count_is_how_many_list_would_return_without_a_limit(queue, clock):
    dead_job(queue, kind="mail", error="SMTP down")
    dead_job(queue, kind="report", error="disk full")
    queue.enqueue_many([("mail", i) for i in range(150)])
    queue.enqueue("mail", delay=60)
    queue.claim("alice")
    assert queue.count() == 153
    assert queue.count(status="pending") == 150  # 149 ready + 1 scheduled
    assert queue.count(status="scheduled") == 1
    assert queue.count(status="running", worker="alice") == 1
    assert queue.count(kind="mail") == 152
    assert queue.count(status="dead", error_contains="disk") == 1
    assert queue.count(queue="nowhere") == 0
    for status in ("pending", "running", "dead", "scheduled"):
        assert queue.count(status=status) == len(queue.list(status=status, limit=1000))
    with pytest.raises(ValueError, match="unknown status"):
        queue.count(status="done")


def test_retry_force_takes_back_a_running_job_and_fences_out_its_holder(queue):
    from jobq_core import LeaseLost
    job_id = queue.enqueue("k")
    held = queue.claim("w1")
    with pytest.raises(InvalidState, match="a running one with force"):
        queue.retry(job_id)
    queue.retry(job_id, force=True)
    job = queue.get(job_id)
    assert (job.status, job.attempts, job.token) == ("pending", 0, None)
    with pytest.raises(LeaseLost):
        queue.complete(held.id, held.token)
    again = queue.claim("w2")
    assert again.id == job_id and again.token != held.token
    first = queue.attempts(job_id)[0]
    assert (first.outcome, first.worker, first.token) == ("lease lost", "w1", held.token)
    assert "taken back by an operator" in first.error
    queue.complete(again.id, again.token)
    with pytest.raises(InvalidState):
        queue.retry(job_id, force=True)  # a succeeded job stays succeeded


def test_list_count_and_retry_match_name_prefixes_and_search_words_in_the_database(
        queue, clock):
    a = queue.enqueue("email.send", queue="mail-eu")
    b = queue.enqueue("email.digest", queue="mail-us")
    c = queue.enqueue("report.build", queue="reports")
    d = dead_job(queue, "email.send", "SMTPError: Connection REFUSED by mx.example.com")
    assert {j.id for j in queue.list(queue="mail", prefix=True)} == {a, b}
    assert {j.id for j in queue.list(kind="email.", prefix=True)} == {a, b, d}
    assert queue.list(kind="email.", prefix=False) == []  # exact unless asked
    assert [j.id for j in queue.list(search=["refused"])] == [d]  # any case, in the error
    assert [j.id for j in queue.list(search=["report", "reports"])] == [c]
    assert [j.id for j in queue.list(search=[str(b)])] == [b]  # an id
    assert queue.count("dead", kind="email", prefix=True, search=["mx.example"]) == 1
    assert [g.count for g in queue.dead_groups(kind="email", prefix=True)] == [1]
    assert queue.retry_dead(kind="report", prefix=True) == 0
    assert queue.retry_dead(kind="email", prefix=True, search=["smtp"]) == 1
    with pytest.raises(ValueError):
        queue.list(search=[""])


def test_newest_bounds_what_a_listing_and_a_count_look_at(queue):
    """A text search over a long history reads only the newest jobs it is given."""
    ids = queue.enqueue_many([("report.build", {"n": i}) for i in range(6)])
    queue.enqueue("other")
    assert [j.id for j in queue.list(search=["report"], newest=4)] == ids[-3:][::-1]
    assert queue.count(search=["report"], newest=4) == 3
    assert queue.count(search=["report"]) == 6
    assert [j.id for j in queue.list(newest=1)] == [ids[-1] + 1]
    with pytest.raises(ValueError, match="newest"):
        queue.list(newest=0)
