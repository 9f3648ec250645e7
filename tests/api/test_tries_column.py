"""The TRY column before a job's first claim: the limit its enqueue set (its task's
max_attempts, or the enqueue's own) is shown; the default limit, which a worker may still
lower to its task's, is not."""
from __future__ import annotations

from jobq_core import Registry
from jobq_core.presentation.display import tries


def test_a_job_enqueued_through_a_task_shows_the_tasks_limit_before_its_first_claim(queue):
    registry = Registry(queue=queue)

    @registry.task("charge", max_attempts=3)
    def charge(payload):
        return None

    assert tries(queue.get(charge.enqueue({"order": 7}))) == "0/3"
    assert tries(queue.get(queue.enqueue("charge"))) == "0/3"  # by kind: the registry is known
    assert tries(queue.get(queue.enqueue("other", max_attempts=5))) == "0/5"
    assert tries(queue.get(queue.enqueue("other"))) == "0/–"  # a worker may still lower it
    queue.claim("w", queues=["default"])
    assert tries(queue.list("running")[0]) == "1/3"
