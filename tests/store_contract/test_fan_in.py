"""A waiting job's ``unmet``: how many of its dependencies are not met yet, kept by every
path that makes a job wait (enqueue after=, chain, group, copy, retry, the migration that
added it) and decremented by each dependency's end, so that a completion's settling does
constant work whatever the size of the group (it used to count every edge of the callback:
a group's fan-in cost grew with the square of its size)."""
from __future__ import annotations

import pytest
from jobq_core import Queue

from .helpers import dead_job

MEMBERS = 2_000


def unmet(queue: Queue, job_id: int) -> int:
    store = queue.store
    return store.backend.run(lambda c, _again: c.execute(
        store.dialect.native("SELECT unmet FROM jobq_jobs WHERE id=?"), (job_id,)).fetchone()[0])


def set_unmet(queue: Queue, job_id: int, value: int) -> None:
    store = queue.store
    store.backend.run(lambda c, _again: c.execute(
        store.dialect.native("UPDATE jobq_jobs SET unmet=? WHERE id=?"), (value, job_id)))


def status(queue, *ids):
    return [str(queue.get(i).status) for i in ids]


def run(queue, job_id, result=None):
    job = queue.claim("w", queues=["default"])
    assert job is not None and job.id == job_id, (job, job_id)
    queue.complete(job.id, job.token, result)


@pytest.mark.slow  # seconds of real time (processes, connections, clocks)
def test_each_completion_of_a_group_of_2000_takes_one_off_the_callbacks_count(queue):
    members, then = queue.group([("m", i) for i in range(MEMBERS)],
                                then={"kind": "sum", "queue": "after"})
    assert unmet(queue, then) == MEMBERS
    left = MEMBERS
    while left:
        jobs = queue.claim_many("w", 100, queues=["default"])
        for i in range(0, len(jobs), 8):  # a worker's completion batch
            batch = jobs[i:i + 8]
            queue.complete_many([(j.id, j.token, None) for j in batch])
            left -= len(batch)
            assert unmet(queue, then) == left or (left == 0 and status(queue, then) ==
                                                  ["pending"])
        assert status(queue, then) == (["waiting"] if left else ["pending"])
    assert len(queue.dependency_results(then)) == MEMBERS


def test_an_allow_failed_callback_counts_dead_members_as_ended(queue):
    members, then = queue.group([{"kind": "m", "max_attempts": 1} for _ in range(3)],
                                then={"kind": "report", "queue": "after", "allow_failed": True})
    a, b, c = queue.claim_many("w", 3, queues=["default"])
    queue.fail(a.id, a.token, "boom")
    assert unmet(queue, then) == 2
    queue.complete(b.id, b.token)
    assert unmet(queue, then) == 1
    queue.fail(c.id, c.token, "boom")
    assert status(queue, then) == ["pending"]


def test_a_new_job_after_finished_and_open_jobs_counts_only_the_open_ones(queue):
    done = queue.enqueue("done")
    run(queue, done)
    open_ = queue.enqueue_many([("o", 1), ("o", 2)])
    job = queue.enqueue("j", after=[done, *open_])
    assert unmet(queue, job) == 2
    chain = queue.chain([("a", 1), ("b", 2), ("c", 3)])
    assert [unmet(queue, i) for i in chain[1:]] == [1, 1]


def test_a_retried_dependent_counts_what_it_waits_on_again(queue):
    dead = dead_job(queue)
    done = queue.enqueue("d")
    run(queue, done)
    other = queue.enqueue("o")
    dependent = queue.enqueue("w", after=[dead, other, done])
    assert status(queue, dependent) == ["cancelled"]
    queue.retry(dependent)
    assert unmet(queue, dependent) == 2
    run(queue, other)
    assert unmet(queue, dependent) == 1
    queue.retry(dead)
    run(queue, dead)
    assert status(queue, dependent) == ["pending"]


def test_a_copied_waiting_job_counts_its_dependencies_here(queue, tmp_path, clock):
    with Queue(tmp_path / "source.db", clock=clock) as src:
        first = src.enqueue("first")
        run(src, first)
        second, third = src.enqueue_many([("second", 2), ("third", 3)])
        src.enqueue("last", after=[first, second, third])
        queue.copy_from(src)
    [waiting] = queue.list("waiting")
    assert unmet(queue, waiting.id) == 2
    for _ in range(2):
        job = queue.claim("w", queues=["default"])
        queue.complete(job.id, job.token)
    assert status(queue, waiting.id) == ["pending"]


def test_a_count_too_low_is_counted_again_before_anything_is_released(queue):
    """What a worker of an older jobq leaves: a job it made wait has 0 (it writes none)."""
    a, b = queue.enqueue_many([("a", 1), ("b", 2)])
    job = queue.enqueue("j", after=[a, b])
    set_unmet(queue, job, 0)
    run(queue, a)
    assert (status(queue, job), unmet(queue, job)) == (["waiting"], 1)
    run(queue, b)
    assert status(queue, job) == ["pending"]


def test_a_count_too_high_is_settled_by_the_reapers_sweep(queue):
    """What a worker of an older jobq leaves: a dependency it completed took none off."""
    a = queue.enqueue("a")
    job = queue.enqueue("j", after=[a])
    set_unmet(queue, job, 2)
    run(queue, a)
    assert status(queue, job) == ["waiting"]
    queue.reap()
    assert status(queue, job) == ["pending"]


def test_a_database_from_before_the_count_is_migrated_with_its_waiting_jobs_counted(
        database, adapter, clock):
    version = adapter.last_version_without["unmet"]
    jobs = ("INSERT INTO jobq_jobs(id, kind, queue, payload, max_attempts, run_at, created_at, "
            "status, has_dependents, finished_at) VALUES (1, 'a', 'default', 'null', 3, 0, 0, "
            "'pending', true, NULL), (2, 'b', 'default', 'null', 3, 0, 0, 'succeeded', true, 0), "
            "(3, 'c', 'default', 'null', 3, 0, 0, 'dead', true, 0), "
            "(4, 'w', 'default', 'null', 3, 0, 0, 'waiting', false, NULL), "
            "(5, 'r', 'default', 'null', 3, 0, 0, 'waiting', false, NULL)")
    deps = ("INSERT INTO jobq_deps(job_id, depends_on, allow_failed) VALUES "
            "(4, 1, false), (4, 2, false), (5, 1, true), (5, 2, true), (5, 3, true)")
    if adapter.name == "sqlite":
        jobs, deps = (s.replace("true", "1").replace("false", "0") for s in (jobs, deps))
    adapter.old_schema(database, version, statements=(jobs, deps))
    with Queue(database, clock=clock) as q:
        assert (unmet(q, 4), unmet(q, 5)) == (1, 1)
        job = q.claim("w")
        assert job.id == 1
        q.complete(job.id, job.token)
        assert status(q, 4, 5) == ["pending", "pending"]


@pytest.mark.parametrize("allow_failed", [False, True])
def test_a_member_cancelled_settles_the_callback_by_its_rule(queue, allow_failed):
    members, then = queue.group([("m", 1), ("m", 2)],
                                then={"kind": "t", "queue": "after",
                                      "allow_failed": allow_failed})
    queue.cancel(members[0])
    if allow_failed:
        assert (status(queue, then), unmet(queue, then)) == (["waiting"], 1)
        run(queue, members[1])
        assert status(queue, then) == ["pending"]
    else:
        assert status(queue, then) == ["cancelled"]
