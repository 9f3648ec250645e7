"""Copying a queue in from another store: ``Queue.copy_in`` (jobs as listed there) and
``Queue.copy_from`` (what ``jobq copy`` runs: jobs in id order with what they wait on,
queue controls, schedules, a record that refuses a second copy). Whatever store they come
from, they arrive as they were, with new ids.

The ``copy_from`` tests run both ways: from an SQLite file into the store under test
(``into``), and from the store under test into an SQLite file (``out of``)."""
from __future__ import annotations

import pytest

from jobq_core import InvalidState, Queue, Rate, Registry

from .helpers import dead_job, succeeded_job


@pytest.fixture
def source(tmp_path, clock):
    with Queue(tmp_path / "source.db", clock=clock, max_attempts=2) as q:
        yield q


@pytest.fixture(params=["into", "out of"])
def pair(request, tmp_path, clock, queue):
    """(source, destination): an SQLite file and the store under test, both ways."""
    with Queue(tmp_path / "other.db", clock=clock) as other:
        yield (other, queue) if request.param == "into" else (queue, other)


def _pending_and_dead(q):
    dead_job(q, "doomed", "RuntimeError: gone", payload=[1, 2])
    q.enqueue("plain", {"n": 1}, queue="mail", priority=5)
    q.enqueue("later", {"big": "x" * 5000}, delay=600)
    q.enqueue("keyed", None, unique_key="k-1")


# -- copy_in ---------------------------------------------------------------------------------


def test_pending_and_dead_jobs_arrive_as_they_were(source, queue):
    _pending_and_dead(source)
    jobs = source.list("pending") + source.list("dead")
    ids = queue.copy_in(jobs)
    assert len(ids) == 4
    for old, new_id in zip(jobs, ids):
        new = queue.get(new_id)
        for field in ("kind", "queue", "payload", "priority", "status", "attempts",
                      "max_attempts", "run_at", "error", "created_at", "finished_at",
                      "unique_key"):
            assert getattr(new, field) == getattr(old, field), field
    assert queue.count("pending") == 3 and queue.count("dead") == 1


def test_a_pending_job_whose_key_is_held_here_yields_the_holder(source, queue):
    held = queue.enqueue("mine", unique_key="k-1")
    source.enqueue("theirs", unique_key="k-1")
    assert queue.copy_in(source.list("pending")) == [held]
    assert queue.count() == 1


def test_a_dead_job_keeps_its_key_beside_a_live_holder(source, queue):
    held = queue.enqueue("mine", unique_key="k-1")
    source.enqueue("theirs", unique_key="k-1", max_attempts=1)
    job = source.claim("w")
    source.fail(job.id, job.token, "no")
    [copied] = queue.copy_in(source.list("dead"))
    assert copied != held and queue.get(copied).unique_key == "k-1"


def test_finished_jobs_are_refused_by_copy_in_and_nothing_is_written(source, queue):
    succeeded_job(source, "b")
    source.enqueue("a")
    with pytest.raises(InvalidState, match="only pending, running and dead"):
        queue.copy_in(source.list())
    assert queue.count() == 0


def test_copied_jobs_run_here(source, queue):
    source.enqueue("k", {"n": 7})
    queue.copy_in(source.list("pending"))
    job = queue.claim("w")
    queue.complete(job.id, job.token)
    assert queue.get(job.id).status == "succeeded"


# -- copy_from: jobs ---------------------------------------------------------------------------


def test_a_running_job_whose_lease_expired_arrives_pending_runnable_now(pair, clock):
    src, dst = pair
    src.enqueue("lost", {"n": 1})
    src.enqueue("fine")
    claimed = src.claim("w", lease=10)
    clock.advance(60)  # its lease ran out; no reaper ran
    assert src.get(claimed.id).status == "running"
    report = dst.copy_from(src)
    assert report.copied == {"pending": 1, "running": 1, "waiting": 0, "dead": 0}
    [job] = dst.list("pending", kind="lost")
    assert (job.attempts, job.worker, job.token, job.lease_until) == (1, None, None, None)
    assert job.run_at <= clock.now() and job.payload == {"n": 1}
    assert {j.kind for j in dst.claim_many("w2", 5)} == {"lost", "fine"}


def test_a_running_job_an_operator_asked_to_cancel_arrives_cancelled(pair):
    src, dst = pair
    job_id = src.enqueue("stop me")
    src.claim("w")
    src.cancel(job_id)
    dst.copy_from(src)
    [job] = dst.list()
    assert job.status == "cancelled" and job.finished_at is not None


def test_a_job_whose_unique_key_is_held_here_is_skipped_and_not_counted(pair):
    src, dst = pair
    dst.enqueue("mine", unique_key="k-1")
    src.enqueue("theirs", unique_key="k-1")
    src.enqueue("other", unique_key="k-2")
    src.enqueue("plain")
    report = dst.copy_from(src)
    assert report.copied["pending"] == 2
    assert report.skipped == {"pending": {"unique_key_held": 1}}
    assert sorted(j.kind for j in dst.list()) == ["mine", "other", "plain"]


def test_waiting_jobs_arrive_waiting_on_the_new_ids_with_finished_ones_they_read(pair):
    src, dst = pair
    dst.enqueue("already here", queue="other")  # the copies' ids differ from the source's
    first = succeeded_job(src, "first", result={"rows": 3})
    succeeded_job(src, "left behind")
    second = src.enqueue("second")
    src.enqueue("last", after=[first, second])
    dead_job(src, "unrelated", queue_name="elsewhere")
    report = dst.copy_from(src)
    assert report.copied == {"pending": 1, "running": 0, "waiting": 1, "dead": 1,
                             "succeeded": 1}
    [waiting] = dst.list("waiting")
    links = dst.dependencies(waiting.id).waits_on
    assert [(link.kind, link.status) for link in links] == [("first", "succeeded"),
                                                            ("second", "pending")]
    job = dst.claim("w", queues=["default"])
    assert job.kind == "second"
    dst.complete(job.id, job.token, "two")
    assert dst.get(waiting.id).status == "pending"  # released by its copied dependency
    assert sorted(dst.dependency_results(waiting.id).values(), key=str) == ["two", {"rows": 3}]


def test_a_chain_half_done_arrives_with_the_step_its_next_one_reads(pair):
    src, dst = pair
    ids = src.chain([("one", None), ("two", None), ("three", None)])
    for result in ("first", "second"):
        job = src.claim("w")
        src.complete(job.id, job.token, result)
    report = dst.copy_from(src)
    assert report.copied == {"pending": 1, "running": 0, "waiting": 0, "dead": 0,
                             "succeeded": 1} and report.skipped == {}
    [three] = dst.list("pending")
    assert three.kind == "three" and src.get(ids[2]).status == "pending"
    assert list(dst.dependency_results(three.id).values()) == ["second"]


def test_a_job_waiting_on_a_job_not_copied_is_skipped_with_its_reason(pair):
    src, dst = pair
    first = src.enqueue("first")
    src.enqueue("then", after=[first])
    report = dst.copy_from(src, statuses=["waiting"])
    assert report.copied == {"waiting": 0}
    assert report.skipped == {"waiting": {"dependency_not_copied": 1}}
    assert dst.count() == 0


# -- copy_from: controls and schedules ---------------------------------------------------------


def test_pauses_limits_and_schedules_arrive_with_their_last_ticks(pair, clock):
    src, dst = pair
    src.pause("mail")
    src.set_limit("default", concurrency=2, rate="10/m")
    src.set_limit("keys", key_concurrency=1, ordered=True)
    registry = Registry()
    ticking = registry.periodic("report", every=60)
    quiet = registry.periodic("cleanup", every=3600, queue="mail")
    src.register_schedule(ticking, since=clock.now() - 120)
    src.register_schedule(quiet, since=clock.now() - 10)
    tick = ticking.latest_tick(clock.now())
    src.enqueue_tick(ticking, tick)

    report = dst.copy_from(src)
    assert report.queues == ("default", "keys", "mail") and report.queues_kept == ()
    assert set(report.schedules) == {ticking.key, quiet.key}
    queues = dst.queues()
    assert queues["mail"].paused and not queues["default"].paused
    assert (queues["default"].concurrency, queues["default"].rate) == (2, Rate(10, 60.0))
    assert (queues["keys"].key_concurrency, queues["keys"].ordered) == (1, True)
    schedules = {s.key: s for s in dst.schedules()}
    [tick_job] = dst.list("pending", kind="report")
    assert (schedules[ticking.key].last_tick, schedules[ticking.key].last_job) == (
        tick, tick_job.id)
    assert (schedules[quiet.key].last_tick, schedules[quiet.key].last_job) == (
        clock.now() - 10, None)
    assert dst.enqueue_tick(ticking, tick) is None  # that tick is not enqueued again


def test_a_copied_rate_limit_holds_in_the_new_store(pair):
    src, dst = pair
    src.set_limit("slow", rate="1/h")
    src.enqueue_many([{"kind": "k", "queue": "slow"}] * 3)
    dst.copy_from(src)
    assert len(dst.claim_many("w", 5)) == 1
    assert dst.claim_many("w", 5) == []  # the window counted the first one


def test_the_destinations_own_controls_and_schedules_are_kept(pair, clock):
    src, dst = pair
    src.pause("mail")
    src.set_limit("default", concurrency=5)
    dst.set_limit("mail", concurrency=1)
    schedule = Registry().periodic("report", every=60)
    src.register_schedule(schedule, since=clock.now() - 600)
    dst.register_schedule(schedule, since=clock.now())
    report = dst.copy_from(src)
    assert (report.queues, report.queues_kept) == (("default",), ("mail",))
    assert (report.schedules, report.schedules_kept) == ((), (schedule.key,))
    assert not dst.queues()["mail"].paused and dst.queues()["mail"].concurrency == 1
    assert dst.schedules()[0].last_tick == clock.now()


# -- copy_from: the record ----------------------------------------------------------------------


def test_a_second_copy_from_the_same_source_is_refused_and_writes_nothing(pair):
    src, dst = pair
    src.enqueue("a")
    src.enqueue("b")
    dst.copy_from(src)
    src.enqueue("c")
    src.pause("mail")
    with pytest.raises(InvalidState, match="already holds a copy of .* through its job"):
        dst.copy_from(src)
    assert sorted(j.kind for j in dst.list()) == ["a", "b"]
    assert set(dst.queues()) == {"default"}  # not mail: its pause came after the copy


def test_resume_copies_only_the_jobs_after_the_last_one_copied(pair):
    src, dst = pair
    src.enqueue("a")
    dst.copy_from(src)
    src.enqueue("b")
    report = dst.copy_from(src, resume=True)
    assert report.resumed and report.copied["pending"] == 1
    assert sorted(j.kind for j in dst.list()) == ["a", "b"]
    with pytest.raises(InvalidState, match="resume it with the same statuses"):
        dst.copy_from(src, statuses=["pending"], resume=True)


def test_an_interrupted_copy_keeps_whole_pages_and_resumes_where_it_stopped(pair, monkeypatch):
    from jobq_core.api import copying

    src, dst = pair
    monkeypatch.setattr(copying, "PAGE", 3)
    src.enqueue_many([("job", {"i": i}) for i in range(8)])

    def stop(report):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        dst.copy_from(src, on_page=stop)
    assert sorted(j.payload["i"] for j in dst.list()) == [0, 1, 2]
    report = dst.copy_from(src, resume=True)
    assert report.copied["pending"] == 5 and report.through == 8
    assert sorted(j.payload["i"] for j in dst.list()) == list(range(8))


def test_after_a_resume_a_job_waiting_on_one_copied_before_is_skipped(pair, monkeypatch):
    from jobq_core.api import copying

    src, dst = pair
    monkeypatch.setattr(copying, "PAGE", 1)
    first = src.enqueue("first")
    src.enqueue("then", after=[first])

    def stop(report):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        dst.copy_from(src, on_page=stop)
    report = dst.copy_from(src, resume=True)
    assert report.skipped == {"waiting": {"dependency_copied_earlier": 1}}


def test_a_page_whose_record_moved_meanwhile_writes_nothing(source, queue):
    from jobq_core.api import copying
    from jobq_core.store.copy_records import CopyMark

    source.enqueue("a")
    key = copying.MARK_PREFIX + source.store.location()
    queue.copy_from(source)
    [job] = source.list()
    with pytest.raises(InvalidState, match="record of this copy changed"):
        queue.store.job_copy_in([copying.copied_job(job, 0.0)], 0.0,
                                CopyMark(key, "not what it reads", "x"))
    assert queue.count() == 1


def test_a_copy_from_a_database_into_itself_is_refused(queue, open_queue):
    queue.enqueue("a")
    with pytest.raises(ValueError, match="both the source and the destination"):
        queue.copy_from(open_queue())
    assert queue.count() == 1
