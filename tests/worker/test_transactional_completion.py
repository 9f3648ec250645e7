"""``ctx.complete(conn=...)`` in a worker, with the thread pool and the process pool, on
SQLite and PostgreSQL: a committed completion is the run's outcome (the worker writes
nothing more), a rolled-back one leaves the handler's outcome to be written as usual, a
fenced-out one rolls the application's writes back, and a connection to another
database is refused."""
from __future__ import annotations

import threading

import pytest
from stores import AppDB

from jobq_core import Queue, Worker
from jobq_core.testing import wait_for

from .txn_tasks import registry


@pytest.fixture(params=["thread", "process"])
def pool(request):
    return request.param


@pytest.fixture
def producer(database):
    with Queue(database) as q:
        yield q


@pytest.fixture
def app(producer, database):
    with AppDB(database) as db:
        db.create_accounts(rows=3)
        yield db


def burst(database, pool, **kwargs) -> Worker:
    with Queue(database) as q:
        w = Worker(q, registry, pool=pool, concurrency=2, **kwargs)
        w.run(burst=True, handle_signals=False)
    return w


def test_a_committed_completion_is_the_runs_outcome_and_the_worker_writes_nothing_more(
        database, pool, producer, app):
    job_id = producer.enqueue("pay", {"db": database, "account": 1, "result": {"paid": 1},
                                      "returned": "ignored"})
    w = burst(database, pool)
    job = producer.get(job_id)
    assert job.status == "succeeded" and job.result == {"paid": 1} and job.attempts == 1
    assert [a.outcome for a in producer.attempts(job_id)] == ["succeeded"]
    assert app.counts() == {1: 1, 2: 0, 3: 0}
    assert w.counts["succeeded"] == 1 and w.counts["lost"] == 0
    assert w.run_metrics().outcomes == {("default", "pay", "succeeded"): 1}


def test_a_rolled_back_completion_leaves_the_handlers_outcome_to_be_written(
        database, pool, producer, app):
    ok = producer.enqueue("pay", {"db": database, "account": 1, "then": "rollback",
                                  "returned": "from the handler"})
    failing = producer.enqueue("pay", {"db": database, "account": 2,
                                       "then": "rollback and raise"}, max_attempts=1)
    w = burst(database, pool)
    assert producer.get(ok).status == "succeeded"
    assert producer.get(ok).result == "from the handler"
    assert producer.get(failing).status == "dead"
    assert "rolled back, then failed" in producer.get(failing).error
    assert app.counts() == {1: 0, 2: 0, 3: 0}  # the application's writes went with them
    assert w.counts["succeeded"] == 1 and w.counts["dead"] == 1


def test_a_fenced_out_completion_rolls_the_applications_writes_back(database, pool, producer,
                                                                   app, tmp_path):
    go = tmp_path / "go"
    job_id = producer.enqueue("pay", {"db": database, "account": 3, "go": str(go)})
    with Queue(database) as q:
        w = Worker(q, registry, pool=pool, concurrency=1)
        t = threading.Thread(target=lambda: w.run(burst=True, handle_signals=False))
        t.start()
        try:
            first = wait_for(lambda: (j := producer.get(job_id)).status == "running" and j)
            producer.retry(job_id, force=True)  # an operator takes it back: the run is fenced out
            go.touch()
        finally:
            t.join(60)
    job = producer.get(job_id)
    assert job.status == "succeeded" and job.attempts == 1 and job.token != first.token
    assert [a.outcome for a in producer.attempts(job_id)] == ["lease lost", "succeeded"]
    assert app.counts()[3] == 1  # the fenced-out run's +1 was rolled back
    assert w.counts["lost"] == 1 and w.counts["succeeded"] == 1


def test_a_completion_on_a_connection_to_another_database_fails_the_run(database, pool,
                                                                        producer, adapter,
                                                                        tmp_path):
    (tmp_path / "other").mkdir()
    with adapter.database(tmp_path / "other") as other:
        Queue(other).close()
        job_id = producer.enqueue("pay-elsewhere", {"other": other})
        burst(database, pool)
    job = producer.get(job_id)
    assert job.status == "dead" and "UnusableConnection" in job.error
    assert "not to this queue's database" in job.error
