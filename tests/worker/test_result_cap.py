"""A handler's result is capped like a payload: one over the limit (as JSON) is not stored,
and the job goes dead at once with an error saying so, in either pool; one at the limit is
stored. In the process pool the child checks it, so it never reaches the worker."""
from __future__ import annotations

import pytest

from jobq_core import Queue, Worker

from .pool_tasks import registry

LIMIT = 4096


@pytest.mark.parametrize("pool", ["thread", "process"])
def test_a_result_over_the_cap_fails_its_job_dead_with_an_error_saying_so(db, producer, pool):
    over = producer.enqueue("big", {"n": LIMIT + 1}, max_attempts=5)
    at = producer.enqueue("big", {"n": LIMIT})
    with Queue(db) as q:
        Worker(q, registry, pool=pool, max_result_bytes=LIMIT).run(burst=True,
                                                                   handle_signals=False)
    job = producer.get(over)
    assert job.status == "dead" and job.attempts == 1 and job.result is None
    assert "ResultTooLarge" in job.error
    assert f"is {LIMIT + 1} bytes as JSON; the limit is {LIMIT} bytes" in job.error
    assert producer.get(at).status == "succeeded"
    assert len(producer.get(at).result) == LIMIT - 2


def test_the_default_cap_is_the_queues_payload_cap(db, producer):
    producer.enqueue("big", {"n": 2001})
    with Queue(db, max_payload_bytes=2000) as q:
        w = Worker(q, registry)
        assert w.max_result_bytes == 2000
        w.run(burst=True, handle_signals=False)
    assert producer.list()[0].status == "dead"


def test_a_cap_below_two_bytes_is_refused(db):
    with Queue(db) as q, pytest.raises(ValueError, match="max_result_bytes"):
        Worker(q, registry, max_result_bytes=1)
