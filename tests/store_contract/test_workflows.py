"""Job dependencies: enqueue(after=...), chain, group, and what a job's end settles."""
import pytest

from jobq_core import JobNotFound

from .helpers import dead_job, run, status, succeeded_job, unsettled


def test_a_job_after_another_waits_until_it_succeeds_then_is_pending(queue):
    a = queue.enqueue("a")
    b = queue.enqueue("b", after=[a])
    assert status(queue, b) == ["waiting"]
    assert [j.id for j in queue.claim_many("w", 10)] == [a]  # a waiting job is never claimed
    assert status(queue, b) == ["waiting"]
    job = queue.get(a)
    queue.complete(a, job.token, {"n": 1})
    assert status(queue, b) == ["pending"]
    assert queue.dependency_results(b) == {a: {"n": 1}}
    run(queue, b)


def test_a_dependency_that_succeeded_already_counts_as_done(queue):
    a = succeeded_job(queue, result=7)
    b = queue.enqueue("b", after=[a])
    assert status(queue, b) == ["pending"]
    assert queue.dependency_results(b) == {a: 7}


def test_a_missing_dependency_raises_and_stores_nothing(queue):
    a = queue.enqueue("a")
    with pytest.raises(JobNotFound):
        queue.enqueue("b", after=[a, 999])
    with pytest.raises(JobNotFound):
        queue.enqueue_many([("x", None), {"kind": "y", "after": [998]}])
    assert queue.count() == 1 and queue.dependencies(a).waited_by == ()


def test_a_dependency_that_ends_dead_cancels_its_dependents_and_theirs(queue):
    a = queue.enqueue("a", max_attempts=1)
    b = queue.enqueue("b", after=[a])
    c = queue.enqueue("c", after=[b])
    job = queue.claim("w")
    queue.fail(job.id, job.token, "boom")
    assert status(queue, a, b, c) == ["dead", "cancelled", "cancelled"]
    assert f"dependency {a} ended dead" in queue.get(b).error
    assert f"dependency {b} ended cancelled" in queue.get(c).error


def test_a_failure_with_attempts_left_leaves_dependents_waiting(queue, clock):
    a = queue.enqueue("a", max_attempts=3)
    b = queue.enqueue("b", after=[a])
    job = queue.claim("w")
    queue.fail(job.id, job.token, "boom", retry_in=0)
    assert status(queue, a, b) == ["pending", "waiting"]
    run(queue, a)
    assert status(queue, b) == ["pending"]


def test_allow_failed_runs_once_every_dependency_ended_however(queue):
    a = queue.enqueue("a", max_attempts=1)
    ok = queue.enqueue("ok")
    b = queue.enqueue("b", after=[a, ok], allow_failed=True)
    job = queue.claim("w")
    queue.fail(job.id, job.token, "boom")
    assert status(queue, b) == ["waiting"]  # ok has not ended yet
    run(queue, ok, "fine")
    assert status(queue, b) == ["pending"]
    assert queue.dependency_results(b) == {a: None, ok: "fine"}


def test_a_dead_dependency_given_at_enqueue_cancels_the_new_job_unless_allowed(queue):
    a = dead_job(queue)
    assert status(queue, queue.enqueue("b", after=[a])) == ["cancelled"]
    assert status(queue, queue.enqueue("c", after=[a], allow_failed=True)) == ["pending"]


def test_cancelling_a_waiting_job_cancels_what_waits_on_it(queue):
    a = queue.enqueue("a")
    b = queue.enqueue("b", after=[a])
    c = queue.enqueue("c", after=[b])
    assert queue.cancel(b) == "cancelled"
    assert status(queue, a, b, c) == ["pending", "cancelled", "cancelled"]
    run(queue, a)
    assert status(queue, b, c) == ["cancelled", "cancelled"]


def test_a_retried_dependency_that_succeeds_releases_its_waiting_dependents(queue):
    a = queue.enqueue("a", max_attempts=1)
    waits = queue.enqueue("w", after=[a], allow_failed=False)
    other = queue.enqueue("o")
    later = queue.enqueue("l", after=[other, a], allow_failed=True)
    job = queue.claim("w")
    queue.fail(job.id, job.token, "boom")
    assert status(queue, waits, later) == ["cancelled", "waiting"]
    queue.retry(a)
    run(queue, a)
    assert status(queue, waits, later) == ["cancelled", "waiting"]  # cancelled stays so
    run(queue, other)
    assert status(queue, later) == ["pending"]


def test_a_chain_runs_one_job_after_the_other(queue):
    ids = queue.chain([("one", 1), {"kind": "two", "payload": 2}, ("three", 3)])
    assert status(queue, *ids) == ["pending", "waiting", "waiting"]
    for i, job_id in enumerate(ids):
        [job] = queue.claim_many("w", 10)  # only the next one of the chain is ready
        assert job.id == job_id
        queue.complete(job.id, job.token, i)
    assert queue.dependency_results(ids[2]) == {ids[1]: 1}


def test_a_group_callback_runs_after_every_member_succeeded(queue):
    members, then = queue.group([("m", i) for i in range(4)], then=("sum", None))
    assert status(queue, then) == ["waiting"]
    jobs = queue.claim_many("w", 10)
    assert sorted(j.id for j in jobs) == members
    queue.complete_many([(j.id, j.token, j.payload) for j in jobs[:3]])
    assert status(queue, then) == ["waiting"]
    queue.complete_many([(jobs[3].id, jobs[3].token, jobs[3].payload)])
    assert status(queue, then) == ["pending"]
    assert queue.dependency_results(then) == {m: i for i, m in enumerate(members)}


def test_complete_and_claim_releases_a_dependent_and_can_claim_it_at_once(queue):
    a = queue.enqueue("a")
    b = queue.enqueue("b", after=[a])
    job = queue.claim("w")
    accepted, jobs = queue.complete_and_claim([(job.id, job.token, None)], "w", 1)
    assert accepted == [True] and [j.id for j in jobs] == [b]


def test_complete_and_claim_answers_each_completion_of_a_mixed_batch_in_order(queue):
    """Jobs nothing waits on, a job another waits on, a completion fenced out and the same
    completion twice, in one batch: each answered in its place, the released dependent
    claimed with the rest."""
    a, b, c, d = (queue.enqueue(k) for k in "abcd")
    queue.enqueue("after-b", after=[b])
    ja, jb, jc, jd = queue.claim_many("w", 4)
    queue.enqueue("later")
    batch = [(a, ja.token, 1), (d, jd.token + 1, 2), (b, jb.token, 3), (c, jc.token, 4),
             (a, ja.token, 5)]  # d's token is not its claim's: fenced out
    accepted, jobs = queue.complete_and_claim(batch, "w", 2)
    assert accepted == [True, False, True, True, False]
    assert status(queue, a, b, c, d) == ["succeeded", "succeeded", "succeeded", "running"]
    assert queue.get(a).result == 1
    assert sorted(j.kind for j in jobs) == ["after-b", "later"]


def test_a_reaped_job_that_ends_dead_cancels_its_dependents(queue, clock):
    a = queue.enqueue("a", max_attempts=1)
    b = queue.enqueue("b", after=[a])
    queue.claim("w", lease=5)
    clock.advance(10)
    assert queue.reap() == 1
    assert status(queue, a, b) == ["dead", "cancelled"]


def test_dependencies_name_both_ends_with_their_statuses(queue):
    a = queue.enqueue("a")
    b = queue.enqueue("b", after=[a])
    deps = queue.dependencies(a)
    assert [(x.job_id, x.kind, x.status) for x in deps.waited_by] == [(b, "b", "waiting")]
    assert [(x.job_id, x.status) for x in queue.dependencies(b).waits_on] == [(a, "pending")]


def test_stats_count_waiting_jobs_and_listings_filter_them(queue):
    a = queue.enqueue("a")
    queue.enqueue("b", after=[a], queue="q2")
    stats = queue.stats()
    assert stats.waiting == 1 and stats.queues["q2"].waiting == 1 and stats.pending == 1
    assert [j.kind for j in queue.list(status="waiting")] == ["b"]


def test_a_job_that_jobs_wait_on_is_not_pruned_until_they_are_settled(queue, clock):
    a = queue.enqueue("a", max_attempts=1)
    a2 = queue.enqueue("a2")
    waiting = queue.enqueue("w", after=[a, a2], allow_failed=True)
    job = queue.claim("w")
    queue.fail(job.id, job.token, "boom")
    queue.enqueue("newest")  # the newest job is never pruned
    clock.advance(10)
    assert queue.prune(5) == 0  # a: dead, but 'waiting' still waits on it
    run(queue, a2)
    clock.advance(10)
    assert queue.prune(5) == 2 and status(queue, waiting) == ["pending"]


def test_the_reapers_sweep_settles_a_waiting_job_whose_dependencies_all_ended(queue, store):
    a = queue.enqueue("a")
    b = queue.enqueue("b", after=[a])
    job = queue.claim("w")
    queue.complete(job.id, job.token)
    unsettled(store, b)  # a crash between a completion and its settling
    assert status(queue, b) == ["waiting"]
    queue.reap()
    assert status(queue, b) == ["pending"]


def test_after_with_a_unique_key_or_conn_is_refused(queue):
    with pytest.raises(ValueError, match="unique_key"):
        queue.enqueue("b", after=[queue.enqueue("a")], unique_key="k")


def test_a_snoozed_job_runs_again_later_without_using_an_attempt(queue, clock):
    job_id = queue.enqueue("poll", max_attempts=1)
    job = queue.claim("w")
    queue.snooze(job.id, job.token, 30)
    snoozed = queue.get(job_id)
    assert (snoozed.status, snoozed.attempts, snoozed.run_at) == ("pending", 0,
                                                                  clock.now() + 30)
    assert queue.claim("w") is None
    clock.advance(30)
    again = queue.claim("w")
    assert again.id == job_id and again.attempts == 1  # still its first counted attempt
    queue.complete(again.id, again.token)
    assert [a.outcome for a in queue.attempts(job_id)] == ["snoozed", "succeeded"]


def test_a_snooze_from_a_stale_claim_is_refused(queue, clock):
    from jobq_core import LeaseLost

    queue.enqueue("poll")
    job = queue.claim("w", lease=5)
    clock.advance(10)
    queue.reap()
    with pytest.raises(LeaseLost):
        queue.snooze(job.id, job.token, 1)
