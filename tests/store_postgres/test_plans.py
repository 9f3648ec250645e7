"""Claims read the partial indexes on pending jobs, whatever else the table holds, and
heartbeats are HOT updates (they touch no indexed column)."""
from __future__ import annotations

import psycopg

from jobq_core import Queue
from jobq_core.testing import wait_for


def _fill(url, pending=2000, finished=20000, queues=5):
    with psycopg.connect(url, autocommit=True) as c:
        c.execute(
            "INSERT INTO jobq_jobs(kind, queue, payload, max_attempts, run_at, created_at, status, "
            f"finished_at) SELECT 'k', 'q' || (i %% {queues}), '{{}}', 3, i, 0, "
            "CASE WHEN i <= %s THEN 'succeeded' ELSE 'pending' END, "
            "CASE WHEN i <= %s THEN i END FROM generate_series(1, %s) i",
            (finished, finished, finished + pending))
        c.execute("ANALYZE jobq_jobs")


def _plan(q, queues, now=0.0):
    return "\n".join(q.store.explain_claim(queues, 10, now))


def test_a_claim_on_all_queues_reads_the_pending_index(pg_queue, pg_url):
    _fill(pg_url)
    plan = _plan(pg_queue, None)
    assert "Index Scan using jobq_jobs_pending on jobq_jobs" in plan
    assert "SKIP LOCKED" not in plan and "LockRows" in plan
    assert "Seq Scan on jobq_jobs" not in plan  # jobq_queues is tiny: read whole


def test_with_every_job_in_one_queue_a_claim_on_all_queues_still_reads_the_pending_index(
        pg_queue, pg_url):
    # the statistics then say the column has one value: a plan trusting them would expect no
    # job outside the controlled queues and sort every pending job for each claim
    _fill(pg_url, pending=20000, finished=2000, queues=1)
    plan = _plan(pg_queue, None, now=1e9)
    assert "Index Scan using jobq_jobs_pending on jobq_jobs" in plan
    assert "Sort" not in plan and "jobq_jobs_pending_queue" not in plan


def test_a_claim_on_one_queue_reads_the_per_queue_index(pg_queue, pg_url):
    _fill(pg_url)
    plan = _plan(pg_queue, ["q1"])
    assert "Index Scan using jobq_jobs_pending_queue" in plan
    assert "Seq Scan on jobq_jobs" not in plan  # jobq_queues is tiny: read whole


def test_a_claim_on_several_queues_reads_the_per_queue_index_once_per_queue(pg_queue, pg_url):
    _fill(pg_url)
    plan = _plan(pg_queue, ["q1", "q2", "q3"])
    assert "Index Scan using jobq_jobs_pending_queue" in plan
    assert "Seq Scan on jobq_jobs" not in plan  # jobq_queues is tiny: read whole


def test_heartbeats_are_hot_updates(pg_url, clock):
    with psycopg.connect(pg_url, autocommit=True) as c:
        def counts():
            return c.execute("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
                             "WHERE relname = 'jobq_jobs'").fetchone()

        with Queue(pg_url, clock=clock) as q:
            q.enqueue_many([("k", i) for i in range(20)])
            jobs = q.claim_many("w", 20)
        # a backend that ends flushes its statistics at once
        before = wait_for(lambda: (n := counts())[0] >= 20 and n)
        with Queue(pg_url, clock=clock) as q:
            for _ in range(5):
                q.extend_many([(j.id, j.token) for j in jobs])
        after = wait_for(lambda: (n := counts())[0] >= before[0] + 100 and n)
    updated, hot = after[0] - before[0], after[1] - before[1]
    assert updated == 100
    assert hot >= 90  # HOT needs room in the same page: fillfactor 70 leaves it


def test_with_a_controlled_queue_holding_jobs_a_claim_reads_each_queue_by_the_per_queue_index(
        pg_queue, pg_url, monkeypatch):
    from jobq_core.store import controls

    monkeypatch.setattr(controls, "TTL", 0.0)
    _fill(pg_url)
    pg_queue.set_limit("q1", concurrency=2)
    plan = _plan(pg_queue, None)
    assert "Index Only Scan using jobq_jobs_pending_queue" in plan  # the loose scan
    assert "Index Scan using jobq_jobs_pending_queue" in plan
    assert "Seq Scan on jobq_jobs" not in plan
    assert "jobq_jobs_pending on" not in plan
