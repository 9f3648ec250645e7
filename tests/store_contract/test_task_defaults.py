"""A job enqueued by kind takes its task's queue, priority and max_attempts when the queue
knows the registry (``Queue(registry=)``, ``Registry(queue=)``, a ``Worker``), whichever
verb enqueues it: what a worker started on the task's queue then finds."""
from __future__ import annotations

from jobq_core import Registry


def declared(queue) -> Registry:
    registry = Registry(queue=queue)

    @registry.task("pipeline.fetch", queue="pipeline", priority=5, max_attempts=3)
    def fetch(payload):
        return payload

    @registry.task("plain")
    def plain(payload):
        return payload

    return registry


def placed(queue, job_id):
    job = queue.get(job_id)
    return job.queue, job.priority, job.max_attempts


def test_enqueue_by_kind_takes_the_tasks_queue_priority_and_attempts(queue):
    declared(queue)
    assert placed(queue, queue.enqueue("pipeline.fetch", {"url": 1})) == ("pipeline", 5, 3)
    assert placed(queue, queue.enqueue("plain")) == ("default", 0, queue.max_attempts)
    assert placed(queue, queue.enqueue("unregistered")) == ("default", 0, queue.max_attempts)


def test_what_the_enqueue_says_wins_over_the_task(queue):
    declared(queue)
    job_id = queue.enqueue("pipeline.fetch", queue="default", priority=0, max_attempts=9)
    assert placed(queue, job_id) == ("default", 0, 9)


def test_chain_group_and_enqueue_many_items_take_the_tasks_defaults(queue):
    declared(queue)
    chain = queue.chain([("pipeline.fetch", 1), {"kind": "pipeline.fetch", "payload": 2}])
    members, then = queue.group([("pipeline.fetch",)], then=("plain",))
    many = queue.enqueue_many([("pipeline.fetch",), {"kind": "pipeline.fetch", "delay": 5}])
    for job_id in [*chain, *members, *many]:
        assert placed(queue, job_id) == ("pipeline", 5, 3)
    assert placed(queue, then) == ("default", 0, queue.max_attempts)
    claimed = queue.claim_many("w", 10, queues=["pipeline"])
    assert {j.id for j in claimed} >= {chain[0], members[0], many[0]}


def test_a_queue_given_its_registry_at_construction_needs_no_registry_queue(database):
    from jobq_core import Queue

    registry = Registry()

    @registry.task("mail.send", queue="mail")
    def send(payload):
        return None

    with Queue(database, registry=registry) as q:
        assert q.registry is registry
        assert q.get(q.enqueue("mail.send")).queue == "mail"
