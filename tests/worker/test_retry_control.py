"""Retry control, on every store: a task's ``retry_on`` / ``no_retry_on``, and a handler's
``raise Retry(delay=...)`` and ``raise GiveUp(reason)``, through a real Worker (threads and
a process pool) and through ``testing.drain``; the stored error says why, on its first line,
for ``jobq why``, ``jobq show`` and the monitor's dead view. The handlers are in
``retry_tasks.py``, which a process pool's children import by name."""
from __future__ import annotations

import pytest

from jobq_core import GiveUp, Queue, Registry, Retry, Worker
from jobq_core.common.error_groups import error_line
from jobq_core.testing import drain

from .retry_tasks import registry

POOLS = ["thread", pytest.param("process", marks=pytest.mark.slow_on(
    "postgresql", why="the child's side is the same on every store"))]


def burst(db: str, pool: str) -> Worker:
    with Queue(db) as q:
        w = Worker(q, registry, pool=pool, concurrency=2)
        w.run(burst=True, handle_signals=False)
    return w


@pytest.mark.parametrize("pool", POOLS)
def test_retry_on_retries_only_its_exceptions_and_ends_any_other_dead_at_once(db, producer,
                                                                                pool):
    retried = producer.enqueue("net", {"raise": "conn"})
    permanent = producer.enqueue("net", {"raise": "value"})
    burst(db, pool)
    job = producer.get(retried)
    assert (job.status, job.attempts) == ("pending", 1)
    assert error_line(job.error) == "ConnectionError: reset by peer"
    job = producer.get(permanent)
    assert (job.status, job.attempts, job.max_attempts) == ("dead", 1, 3)
    first, rest = job.error.split("\n", 1)
    assert first == ("ValueError: bad invoice 1234 "
                     "(not retried: ValueError is not in retry_on)")
    assert rest.startswith("Traceback") and "bad invoice 1234" in rest  # its error kept
    assert "not retried: ValueError is not in retry_on" in producer.why(permanent).message
    attempt, = producer.attempts(permanent)
    assert error_line(attempt.error) == first


@pytest.mark.parametrize("pool", POOLS)
def test_no_retry_on_ends_its_exceptions_dead_and_retries_the_others(db, producer, pool):
    retried = producer.enqueue("strict", {"raise": "key"})
    permanent = producer.enqueue("strict", {"raise": "value"})
    burst(db, pool)
    assert producer.get(retried).status == "pending"
    job = producer.get(permanent)
    assert (job.status, job.attempts) == ("dead", 1)
    assert error_line(job.error) == \
        "ValueError: bad input (not retried: ValueError is in no_retry_on)"


@pytest.mark.parametrize("pool", POOLS)
def test_retry_with_a_delay_counts_an_attempt_and_runs_again_after_that_delay(db, producer,
                                                                               pool):
    job_id = producer.enqueue("later", {"delay": 30})
    burst(db, pool)
    job = producer.get(job_id)
    assert (job.status, job.attempts) == ("pending", 1)
    attempt, = producer.attempts(job_id)
    assert 29 <= job.run_at - attempt.ended_at <= 31  # the task's backoff would be ~1 s
    assert error_line(job.error) == "Retry: again in 30s: rate limited"


@pytest.mark.parametrize("pool", POOLS)
def test_give_up_ends_the_job_dead_at_once_with_its_reason(db, producer, pool):
    job_id = producer.enqueue("hopeless")
    burst(db, pool)
    job = producer.get(job_id)
    assert (job.status, job.attempts, job.max_attempts) == ("dead", 1, 5)
    assert error_line(job.error) == "GiveUp: the account is closed"
    assert "GiveUp: the account is closed" in producer.why(job_id).message
    group, = producer.dead_groups()
    assert group.line == "GiveUp: the account is closed"


def test_drain_retries_after_the_delay_retry_asked_for_and_ends_it_dead_when_used_up(
        queue, clock):
    job_id = queue.enqueue("later", {"delay": 30})
    start = clock.now()
    ran = drain(queue, registry, clock=clock)
    assert [(r.attempt, r.status) for r in ran] == [(1, "pending"), (2, "dead")]
    assert clock.now() == start + 30  # moved to the retry the handler asked for, no more
    assert error_line(queue.get(job_id).error) == "Retry: again in 30s: rate limited"


def test_drain_honours_retry_on_no_retry_on_and_give_up(queue, clock):
    ids = {name: queue.enqueue(kind, payload) for name, kind, payload in [
        ("conn", "net", {"raise": "conn"}), ("value", "net", {"raise": "value"}),
        ("key", "strict", {"raise": "key"}), ("strict", "strict", {"raise": "value"}),
        ("hopeless", "hopeless", None)]}
    ran = drain(queue, registry, clock=clock)
    runs = {name: [r.status for r in ran if r.job_id == job_id]
            for name, job_id in ids.items()}
    assert runs == {"conn": ["pending", "pending", "dead"], "value": ["dead"],
                    "key": ["pending", "pending", "dead"], "strict": ["dead"],
                    "hopeless": ["dead"]}
    assert error_line(queue.get(ids["value"]).error) == \
        "ValueError: bad invoice 1234 (not retried: ValueError is not in retry_on)"
    assert error_line(queue.get(ids["hopeless"]).error) == "GiveUp: the account is closed"


def test_a_task_given_both_retry_on_and_no_retry_on_is_refused_when_decorated():
    r = Registry()
    with pytest.raises(ValueError, match="retry_on .* or no_retry_on .* not both"):
        r.task("both", retry_on=ConnectionError, no_retry_on=ValueError)
    with pytest.raises(TypeError, match="retry_on takes exception classes, got 'oops'"):
        r.task("bad", retry_on=(ConnectionError, "oops"))
    assert "both" not in r and "bad" not in r


def test_retry_on_a_subclass_of_a_listed_exception_retries():
    r = Registry()

    @r.task("t", retry_on=OSError)
    def t(payload):
        pass

    assert t.not_retried(ConnectionResetError()) is None
    assert t.not_retried(KeyError()) == "KeyError is not in retry_on"


def test_retry_and_give_up_check_what_they_are_given():
    assert Retry(delay=30).delay == 30.0 and Retry().delay is None
    assert str(Retry()) == "again after the task's backoff"
    with pytest.raises(ValueError, match="Retry\\(delay=...\\) takes seconds from 0 to a year"):
        Retry(delay=-1)
    assert GiveUp("closed").reason == "closed"
