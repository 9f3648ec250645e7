"""Retrying a dependent that a dead or cancelled dependency cancelled: it waits again until
that dependency is retried and succeeds, and the reaper's sweep leaves it waiting meanwhile
(it used to cancel it again on its next pass)."""
from __future__ import annotations

from .helpers import dead_job, run, status


def test_a_retried_dependent_waits_through_the_reaper_and_runs_once_its_dependency_succeeds(
        queue):
    dependency = dead_job(queue)
    dependent = queue.enqueue("w", after=[dependency])
    assert status(queue, dependent) == ["cancelled"]
    queue.retry(dependent)
    assert status(queue, dependent) == ["waiting"]
    queue.reap()
    queue.reap()
    assert status(queue, dependent) == ["waiting"]
    queue.retry(dependency)
    run(queue, dependency, 7)
    assert status(queue, dependent) == ["pending"]
    assert queue.dependency_results(dependent) == {dependency: 7}


def test_a_retried_dependent_is_cancelled_again_when_its_dependency_ends_dead_again(queue):
    dependency = dead_job(queue)
    dependent = queue.enqueue("w", after=[dependency])
    queue.retry(dependent)
    queue.retry(dependency)
    job = queue.claim("w")
    queue.fail(job.id, job.token, "boom again")
    assert status(queue, dependency, dependent) == ["dead", "cancelled"]
    assert f"dependency {dependency} ended dead" in queue.get(dependent).error


def test_a_dependent_retried_with_a_dead_and_a_running_dependency_waits_for_both(queue):
    dependency = dead_job(queue)
    other = queue.enqueue("o")
    dependent = queue.enqueue("w", after=[dependency, other])
    queue.retry(dependent)
    run(queue, other)
    queue.reap()
    assert status(queue, dependent) == ["waiting"]
    queue.retry(dependency)
    run(queue, dependency)
    assert status(queue, dependent) == ["pending"]


def test_why_names_the_dead_dependency_a_retried_dependent_waits_on(queue):
    dependency = dead_job(queue)
    dependent = queue.enqueue("w", after=[dependency])
    queue.retry(dependent)
    queue.reap()
    why = queue.why(dependent)
    assert why.reason == "waiting"
    assert why.message.startswith(f"it waits on jobs {dependency} (dead), which ended "
                                  "without succeeding: it runs once they are retried")
    assert why.details["waits_on"] == [{"id": dependency, "status": "dead"}]


def test_a_cancelled_dependency_holds_a_retried_dependent_the_same_way(queue):
    dependency = queue.enqueue("d")
    dependent = queue.enqueue("w", after=[dependency])
    queue.cancel(dependency)
    queue.retry(dependent)
    queue.reap()
    assert status(queue, dependent) == ["waiting"]
    queue.retry(dependency)
    run(queue, dependency)
    assert status(queue, dependent) == ["pending"]


def test_a_retried_allow_failed_dependent_whose_dependencies_all_ended_is_pending_at_once(
        queue):
    dependency = queue.enqueue("d", max_attempts=1)
    report = queue.enqueue("r", after=[dependency], allow_failed=True)
    queue.cancel(report)
    job = queue.claim("w")
    queue.fail(job.id, job.token, "boom")
    queue.retry(report)
    assert status(queue, dependency, report) == ["dead", "pending"]
