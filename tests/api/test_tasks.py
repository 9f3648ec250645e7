"""Task handles: ``@registry.task`` returns a Task that is still the function, enqueues
with its own defaults, and checks and rebuilds typed payloads."""
from __future__ import annotations

import dataclasses
from typing import TypedDict

import pydantic
import pytest

from jobq_core import JobStatus, Queue, Registry, Worker


@dataclasses.dataclass
class Email:
    to: str
    subject: str = ""
    tries: int = 1


class Invoice(TypedDict):
    number: int
    customer: str


class Refund(pydantic.BaseModel):
    order: int
    amount: float


def run_all(q: Queue, r: Registry) -> None:
    Worker(q, r, concurrency=2).run(burst=True, handle_signals=False)


def test_a_task_is_still_callable_as_the_function(queue):
    r = Registry()

    @r.task("add")
    def add(payload, ctx=None):
        """Adds."""
        return payload["a"] + payload["b"]

    assert add({"a": 1, "b": 2}) == 3
    assert add.__name__ == "add" and add.__doc__ == "Adds."
    assert r.get("add") is add and add.fn.__name__ == "add"


def test_enqueue_uses_the_tasks_queue_priority_and_attempts_unless_told_otherwise(queue):
    r = Registry()

    @r.task("mail.send", queue="mail", priority=5, max_attempts=3)
    def send(payload):
        return payload

    job = queue.get(send.enqueue(queue, {"to": "a@example.com"}))
    assert (job.kind, job.queue, job.priority, job.max_attempts) == ("mail.send", "mail", 5, 3)
    assert job.payload == {"to": "a@example.com"}
    other = queue.get(send.enqueue(queue, None, queue="urgent", priority=9, delay=60))
    assert (other.queue, other.priority, other.payload) == ("urgent", 9, None)
    assert other.run_at == pytest.approx(queue.clock.now() + 60)


def test_an_untouched_task_enqueues_with_queues_defaults(queue):
    r = Registry()
    plain = r.task("plain")(lambda p: None)
    job = queue.get(plain.enqueue(queue))
    assert (job.queue, job.priority, job.max_attempts) == ("default", 0, queue.max_attempts)


def test_enqueue_many_writes_one_job_per_payload_in_order(queue):
    r = Registry()
    task = r.task("n", queue="q1")(lambda p: p)
    ids = task.enqueue_many(queue, [1, 2, 3], priority=2)
    jobs = [queue.get(i) for i in ids]
    assert [j.payload for j in jobs] == [1, 2, 3]
    assert {(j.kind, j.queue, j.priority) for j in jobs} == {("n", "q1", 2)}


def test_a_registry_with_a_queue_lets_tasks_enqueue_without_one(db, clock):
    q = Queue(db, clock=clock)
    r = Registry(queue=q)
    task = r.task("ping")(lambda p: p)
    a = task.enqueue({"n": 1})
    b = task.enqueue(payload={"n": 2})
    c, d = task.enqueue_many([{"n": 3}, {"n": 4}])
    assert [q.get(i).payload for i in (a, b, c, d)] == [{"n": i} for i in (1, 2, 3, 4)]
    with pytest.raises(TypeError, match="once"):
        task.enqueue({"n": 5}, {"n": 6})
    q.close()


def test_a_registry_may_be_given_a_database_string(db):
    r = Registry(queue=db)
    task = r.task("ping")(lambda p: p)
    assert r.default_queue.get(task.enqueue(7)).payload == 7
    r.default_queue.close()


def test_enqueue_without_a_queue_anywhere_says_what_is_missing():
    r = Registry()
    task = r.task("ping")(lambda p: p)
    with pytest.raises(TypeError, match="needs a Queue"):
        task.enqueue({"n": 1})


def test_a_dataclass_payload_is_checked_at_enqueue_and_rebuilt_for_the_handler(queue):
    r = Registry()
    seen = []

    @r.task("email")
    def send(email: Email, ctx):
        seen.append((email, ctx.job_id))

    first = send.enqueue(queue, Email("a@example.com", "hi"))
    second = send.enqueue(queue, {"to": "b@example.com"})
    assert queue.get(first).payload == {"to": "a@example.com", "subject": "hi", "tries": 1}
    with pytest.raises(ValueError, match="no field 'too'"):
        send.enqueue(queue, {"too": "typo@example.com"})
    with pytest.raises(ValueError, match="needs 'to'"):
        send.enqueue(queue, {"subject": "no one"})
    with pytest.raises(TypeError, match="tries must be int"):
        send.enqueue(queue, {"to": "c@example.com", "tries": "3"})
    assert queue.count() == 2  # nothing written for the bad ones
    run_all(queue, r)
    assert sorted(seen, key=lambda s: s[1]) == [
        (Email("a@example.com", "hi"), first), (Email("b@example.com"), second)]


def test_a_typeddict_payload_is_checked_and_handed_over_as_a_dict(queue):
    r = Registry()
    seen = []

    @r.task("invoice")
    def invoice(payload: Invoice):
        seen.append(payload)

    invoice.enqueue(queue, {"number": 7, "customer": "acme"})
    with pytest.raises(ValueError, match="needs 'customer'"):
        invoice.enqueue(queue, {"number": 8})
    with pytest.raises(TypeError, match="number must be int"):
        invoice.enqueue(queue, {"number": True, "customer": "x"})
    run_all(queue, r)
    assert seen == [{"number": 7, "customer": "acme"}]


def test_a_pydantic_payload_is_validated_by_its_model(queue):
    r = Registry()
    seen = []

    @r.task("refund")
    async def refund(payload: Refund):
        seen.append(payload)

    refund.enqueue(queue, Refund(order=1, amount=9.5))
    refund.enqueue(queue, {"order": "2", "amount": 3})  # pydantic coerces, as it would
    with pytest.raises(pydantic.ValidationError):
        refund.enqueue(queue, {"order": "two", "amount": 3})
    run_all(queue, r)
    assert sorted(seen, key=lambda p: p.order) == [Refund(order=1, amount=9.5),
                                                   Refund(order=2, amount=3.0)]


def test_a_stored_payload_that_does_not_fit_the_type_fails_the_run(queue):
    r = Registry()

    @r.task("email", max_attempts=1)
    def send(email: Email):
        raise AssertionError("never called")

    job_id = queue.enqueue("email", {"nobody": 1})  # written around the task's check
    run_all(queue, r)
    job = queue.get(job_id)
    assert job.status is JobStatus.DEAD and "no field 'nobody'" in job.error


def test_an_unannotated_or_plain_annotated_handler_gets_the_json_as_is(queue):
    r = Registry()
    got = []
    r.task("a")(lambda p: got.append(p))

    @r.task("b")
    def b(payload: dict):
        got.append(payload)

    r.get("a").enqueue(queue, [1, 2])
    b.enqueue(queue, {"x": 1})
    run_all(queue, r)
    assert sorted(map(str, got)) == ["[1, 2]", "{'x': 1}"]
