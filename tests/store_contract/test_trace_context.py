"""A job's trace context (``Job.trace_context``): stored when the job is made while tracing
is on (``new_jobs.current_trace_context`` set, as ``contrib.otel.instrument`` does), by
every way a job is made; read back by every read of a job, the claim's included; kept by
retries and copies; never written with tracing off. The spans themselves are
``tests/contrib/test_otel.py``'s."""
from __future__ import annotations

import itertools

import pytest
from stores import AppDB

from jobq_core import Queue
from jobq_core.api import new_jobs

from .helpers import dead_job

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.fixture
def tracing(monkeypatch):
    """Tracing on, each job made in a span of its own: the contexts handed out, in order."""
    handed: list[str] = []
    spans = itertools.count(1)

    def current() -> str:
        handed.append(f"00-{TRACE_ID}-{next(spans):016x}-01 vendor=a b,other=c")
        return handed[-1]

    monkeypatch.setattr(new_jobs, "current_trace_context", current)
    return handed


def _every_way_of_making_jobs(queue: Queue) -> list[int]:
    """A job by each producing verb and each path a store takes to insert one."""
    ids = [queue.enqueue("k"),  # every option at its default
           queue.enqueue("k", {"big": "x" * 5000}, queue="mail", priority=2),
           queue.enqueue("k", unique_key="u-1"),
           queue.enqueue("k", key="customer:7")]
    ids += queue.enqueue_many([("k", 1), {"kind": "k", "key": "c8"},
                               {"kind": "k", "unique_key": "u-2"}])
    ids += queue.chain([("a", 1), ("b", 2)])
    group, then = queue.group([("a", 1), ("a", 2)], then=("sum", None))
    ids += [*group, then, queue.enqueue("k", after=[then])]
    return ids


def test_every_way_of_making_a_job_stores_the_trace_context_current_then(queue, tracing):
    ids = _every_way_of_making_jobs(queue)
    assert len(tracing) == len(ids) == 13
    assert [queue.get(i).trace_context for i in ids] == tracing
    assert {j.id: j.trace_context for j in queue.list(payloads=False, limit=50)} == \
        dict(zip(ids, tracing))


def test_a_claim_reads_the_trace_context_and_a_retry_keeps_it(queue, tracing):
    plain = queue.enqueue("plain")
    job_id = queue.enqueue("k", max_attempts=3)
    claimed = {j.id: j.trace_context for j in queue.claim_many("w", 10)}
    assert claimed == {plain: tracing[0], job_id: tracing[1]}
    queue.fail(job_id, queue.get(job_id).token, "boom", retry_in=0)
    again = queue.claim("w")
    assert (again.id, again.attempts, again.trace_context) == (job_id, 2, tracing[1])
    assert len(tracing) == 2  # nothing made anew


def test_with_tracing_off_no_job_stores_a_trace_context(queue, database):
    ids = _every_way_of_making_jobs(queue)
    assert [queue.get(i).trace_context for i in ids] == [None] * len(ids)
    claimed = queue.claim_many("w", 20)  # the ten ready (the others wait on them)
    assert [j.trace_context for j in claimed] == [None] * 10
    with AppDB(database) as app:
        assert app.scalar("SELECT count(*) FROM jobq_jobs WHERE trace_context IS NOT NULL") == 0
        assert app.scalar("SELECT count(*) FROM jobq_jobs") == len(ids)


def test_an_enqueue_in_the_applications_transaction_stores_it_too(queue, database, tracing):
    with AppDB(database) as app:
        one = queue.enqueue("k", key="c7", conn=app.conn)
        many = queue.enqueue_many([("k", {"big": "x" * 5000}), {"kind": "k", "unique_key": "u"}],
                                  conn=app.conn)
        app.commit()
    assert [queue.get(i).trace_context for i in (one, *many)] == tracing


def test_a_copied_job_keeps_its_trace_context(tmp_path, clock, queue, tracing, monkeypatch):
    with Queue(tmp_path / "source.db", clock=clock) as source:
        dead_job(source, "doomed")
        source.enqueue("plain")
        source.enqueue("keyed", unique_key="u-1")
        jobs = source.list("dead") + source.list("pending")
    monkeypatch.setattr(new_jobs, "current_trace_context", None)  # copying is not tracing
    copied = queue.copy_in(jobs)
    assert [queue.get(i).trace_context for i in copied] == tracing


def test_an_older_database_is_migrated_and_its_jobs_have_no_trace_context(database, adapter,
                                                                           clock, tracing):
    adapter.old_schema(database, adapter.last_version_without["trace_context"], statements=(
        "INSERT INTO jobq_jobs(kind, queue, payload, max_attempts, run_at, created_at) "
        "VALUES ('old', 'default', 'null', 3, 0, 0)",))
    with Queue(database, clock=clock) as q:
        [old] = q.list()
        assert (old.kind, old.trace_context) == ("old", None)
        new = q.enqueue("new")
        assert [(j.kind, j.trace_context) for j in q.claim_many("w", 5)] == [
            ("old", None), ("new", tracing[0])]
        assert q.get(new).trace_context == tracing[0]
    with AppDB(database) as app:
        assert app.scalar("SELECT value FROM jobq_meta WHERE key='schema_version'") == str(
            adapter.schema_version)
