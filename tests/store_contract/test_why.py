"""Queue.why: the first reason that applies, for every reason, on every store."""
import pytest

from jobq_core import WHY_REASONS, Hold, JobNotFound, Rate

from .helpers import dead_job, run, succeeded_job, unsettled


def reason(queue, job_id):
    return queue.why(job_id).reason


def serve(queue, *queues):
    """A live worker, as the registry sees it."""
    queue.register_worker("w1", host="h", pid=1, queues=list(queues) or None, concurrency=1,
                          beat_interval=10.0)


def test_finished_jobs_say_how_they_ended(queue):
    assert reason(queue, succeeded_job(queue)) == "succeeded"
    dead = dead_job(queue, error="ValueError: boom")
    why = queue.why(dead)
    assert why.reason == "dead" and "boom" in why.message and why.details["attempts"] == 1
    cancelled = queue.enqueue("k")
    queue.cancel(cancelled)
    assert reason(queue, cancelled) == "cancelled"


def test_a_running_job_names_its_worker_and_its_lease(queue, clock):
    job_id = queue.enqueue("k")
    queue.claim("w9", lease=30)
    clock.advance(10)
    why = queue.why(job_id)
    assert why.reason == "running" and "w9" in why.message and why.details["lease_left"] == 20


def test_a_waiting_job_names_what_it_waits_on(queue):
    a = queue.enqueue("a")
    b = queue.enqueue("b", after=[a])
    why = queue.why(b)
    assert why.reason == "waiting" and f"{a} (pending)" in why.message


def test_a_job_not_due_yet_is_held_by_its_time_before_its_paused_queue(queue, clock):
    serve(queue)
    job_id = queue.enqueue("k", queue="mail", delay=60)
    queue.pause("mail")
    assert reason(queue, job_id) == "scheduled"
    clock.advance(61)
    queue.beat_worker("w1")
    assert reason(queue, job_id) == "paused"
    queue.resume("mail")
    assert reason(queue, job_id) == "ready"


def test_a_job_delayed_for_days_says_so_though_its_queue_is_at_a_limit(queue, clock):
    serve(queue)
    queue.set_limit("mail", rate="1/h", concurrency=1)
    queue.enqueue("k", queue="mail")
    assert queue.claim("w1", queues=["mail"]) is not None  # the window is full, the slot taken
    later = queue.enqueue("k", queue="mail", delay=3 * 86400)
    why = queue.why(later)
    assert why.reason == "scheduled" and "(in 3d00h)" in why.message
    assert reason(queue, queue.enqueue("k", queue="mail")) == "queue_limit"


def test_a_waiting_job_whose_dependencies_all_ended_says_it_is_about_to_be_settled(queue, store):
    a = queue.enqueue("a")
    b = queue.enqueue("b", after=[a])
    run(queue, a)
    unsettled(store, b)  # a crash between a completion and its settling
    why = queue.why(b)
    assert why.reason == "waiting" and "every job it waits on has ended" in why.message
    assert "reaper" in why.message and why.details["waits_on"] == []


def test_a_queue_at_its_concurrency_limit(queue):
    serve(queue)
    queue.set_limit("mail", concurrency=1)
    queue.enqueue("k", queue="mail")
    second = queue.enqueue("k", queue="mail")
    queue.claim("w", queues=["mail"])
    why = queue.why(second)
    assert why.reason == "queue_limit" and "1/1 running" in why.message


def test_a_queue_out_of_its_rate_window(queue, clock):
    serve(queue)
    queue.set_limit("api", rate=Rate(1, 60.0))
    first = queue.enqueue("k", queue="api")
    second = queue.enqueue("k", queue="api")
    job = queue.claim("w", queues=["api"])
    queue.complete(job.id, job.token)
    assert job.id == first
    why = queue.why(second)
    assert why.reason == "rate_limit" and why.details["until"] == pytest.approx(clock.now() + 60)


def test_a_retry_not_due_yet_says_which_attempt_and_when(queue, clock):
    serve(queue)
    job_id = queue.enqueue("k", max_attempts=3)
    job = queue.claim("w")
    queue.fail(job.id, job.token, "boom", retry_in=30)
    why = queue.why(job_id)
    assert why.reason == "retry" and why.details["attempt"] == 2 and "2/3" in why.message


def test_no_live_worker_for_its_queue(queue, clock):
    job_id = queue.enqueue("k", queue="mail")
    assert reason(queue, job_id) == "no_worker"
    serve(queue, "other")
    assert reason(queue, job_id) == "no_worker"
    serve(queue, "mail")
    assert reason(queue, job_id) == "ready"
    clock.advance(3600)  # the worker fell silent: lost
    assert reason(queue, job_id) == "no_worker"


def test_a_ready_job_counts_the_jobs_ahead_of_it(queue):
    serve(queue)
    ids = [queue.enqueue("k") for _ in range(3)]
    urgent = queue.enqueue("k", priority=5)
    assert queue.why(urgent).details["ahead"] == 0 and "next in line" in queue.why(urgent).message
    assert [queue.why(i).details["ahead"] for i in ids] == [1, 2, 3]


def test_every_reason_is_listed_and_a_missing_job_raises(queue):
    assert len(set(WHY_REASONS)) == 13
    with pytest.raises(JobNotFound):
        queue.why(4711)


def test_a_key_held_by_more_running_jobs_than_the_message_names(queue, monkeypatch):
    from jobq_core.store import controls

    monkeypatch.setattr(controls, "TTL", 0.0)
    serve(queue)
    queue.set_limit("api", key_concurrency=10)
    ids = queue.enqueue_many([{"kind": "k", "queue": "api", "key": "c7"}] * 11)
    queue.claim_many("w", 20, queues=["api"])
    why = queue.why(ids[-1])
    assert why.reason == "key_held" and why.details["limit"] == 10
    assert why.message.endswith("and 2 more (10/10 running)") and len(why.details["running"]) == 8


def test_holds_tells_a_pages_keys_and_dependencies_in_one_read(queue):
    serve(queue)
    done = succeeded_job(queue)
    queue.set_limit("api", ordered=True)
    first, second = queue.enqueue_many([{"kind": "k", "queue": "api", "key": "c7"}] * 2)
    plain = queue.enqueue("k", queue="api")
    queue.claim("w", queues=["api"])
    after = queue.enqueue("k", after=[first, done, plain])
    holds = queue.holds([first, second, plain, after, 4711])
    assert set(holds) == {first, second, plain, after}  # no job 4711: left out
    assert (holds[first].key_running, holds[first].key_earlier) == (1, None)
    assert (holds[second].key_running, holds[second].key_earlier) == (1, first)
    assert holds[plain] == Hold()  # no key, waits on nothing
    assert holds[after].waits_on == 2  # the running one and the pending one, not the done one
    assert queue.holds([]) == {}
    with pytest.raises(ValueError):
        queue.holds([0])


def test_stats_carry_what_why_decides_a_rate_limit_by(queue, clock):
    queue.set_limit("api", rate=Rate(2, 60.0))
    queue.enqueue_many([{"kind": "k", "queue": "api"}] * 3)
    queue.claim_many("w", 5, queues=["api"])
    api = queue.stats().queues["api"]
    assert (api.window_start, api.window_count) == (clock.now(), 2)
