"""What the monitor reads: stats, throughput per time bucket, dead jobs grouped by error."""
import pytest

from .helpers import dead_job, succeeded_job


def test_stats_counts_jobs_by_status_and_queue_and_measures_lag(queue, clock):
    queue.enqueue("k", queue="mail")
    clock.advance(10)
    queue.enqueue_many([("k", 1), ("k", 2)])
    queue.enqueue("k", queue="mail", delay=100)
    running = queue.claim("w", queues=["default"], lease=5)
    dead = queue.enqueue("k", queue="mail", max_attempts=1, priority=9)
    job = queue.claim("w", queues=["mail"])
    assert job.id == dead
    queue.fail(job.id, job.token, "x")
    clock.advance(10)
    s = queue.stats()
    assert (s.pending, s.scheduled, s.running, s.dead, s.retrying) == (3, 1, 1, 1, 0)
    assert s.expired_leases == 1
    assert s.oldest_pending_age == 20
    assert s.dead_recent == 1 and s.succeeded_recent == 0
    assert s.queues["mail"].pending == 2 and s.queues["mail"].dead == 1
    assert s.queues["default"].running == 1 and s.queues["default"].pending == 1
    queue.complete(running.id, running.token)
    assert queue.stats().succeeded_recent == 1
    clock.advance(3601)
    assert queue.stats().succeeded_recent == 0  # outside the window


def test_stats_of_an_empty_queue(queue):
    s = queue.stats()
    assert (s.pending, s.running, s.dead) == (0, 0, 0)
    assert s.oldest_pending_age is None and s.queues == {}


def test_throughput_counts_finished_jobs_and_failed_attempts_per_aligned_bucket(queue, clock):
    succeeded_job(queue)  # 100 s before the span: not counted
    clock.advance(100)
    t0 = clock.now()
    assert t0 % 10 == 0  # so the buckets below start at t0 - 10, t0, t0 + 10
    succeeded_job(queue)
    queue.enqueue_many([("k", 1), ("k", 2)])
    failing, expiring = queue.claim_many("w", 2, lease=5)
    queue.fail(failing.id, failing.token, "try again", retry_in=1000)
    clock.advance(10)
    succeeded_job(queue)
    succeeded_job(queue)
    dead_job(queue)
    assert queue.reap() == 1  # the expired lease is a failed attempt too
    t = queue.throughput(span=30, bucket=10)
    assert (t.start, t.bucket) == (t0 - 10, 10)
    assert t.succeeded == (0, 1, 2)
    assert t.failed == (0, 1, 2)
    assert t.dead == (0, 0, 1)
    clock.advance(5)  # within the same bucket: the same buckets, the last one filling
    assert queue.throughput(span=30, bucket=10) == t
    with pytest.raises(ValueError, match="bucket <= span"):
        queue.throughput(span=5, bucket=10)


TRACEBACK = ('Traceback (most recent call last):\n  File "billing.py", line {n}, in charge\n'
             '    customer = row["customer"]\nKeyError: \'customer\'')


def test_dead_groups_fold_long_numbers_and_read_a_tracebacks_last_line(queue, clock):
    http = [dead_job(queue, "invoice", f"HTTP 502 for invoice INV-{n}", queue_name=q)
            for n, q in ((59476, "billing"), (59480, "mail"), (1234567, "billing"))]
    clock.advance(1)
    keyerror = [dead_job(queue, "invoice", TRACEBACK.format(n=n)) for n in (12, 40)]
    clock.advance(1)
    other_kind = dead_job(queue, "report", "HTTP 502 for invoice INV-1")
    succeeded_job(queue, "invoice")
    queue.enqueue("invoice")

    groups = queue.dead_groups()
    assert [(g.kind, g.line, g.count) for g in groups] == [
        ("invoice", "HTTP 502 for invoice INV-1234567", 3),  # its most recent job's line
        ("invoice", "KeyError: 'customer'", 2),
        ("report", "HTTP 502 for invoice INV-1", 1),
    ]
    first, second, third = groups
    assert (first.last_id, first.queues, first.match) == (
        http[-1], ("billing", "mail"), "HTTP 502 for invoice INV-")
    assert first.key == "HTTP 502 for invoice INV-#"
    assert (second.last_id, second.queues, second.match) == (
        keyerror[-1], ("default",), "KeyError: 'customer'")
    assert (third.last_id, third.last_finished_at) == (other_kind, clock.now())
    assert first.last_finished_at == clock.now() - 2
    for g in groups:  # match and kind select the group's jobs
        assert queue.count(status="dead", kind=g.kind, error_contains=g.match) == g.count

    assert [g.count for g in queue.dead_groups(queue="mail")] == [1]
    assert [g.kind for g in queue.dead_groups(kind="report")] == ["report"]
    assert [g.line for g in queue.dead_groups(error_contains="KeyError")] == [
        "KeyError: 'customer'"]
    assert queue.dead_groups(limit=1) == groups[:1]


def test_dead_groups_keep_apart_failures_whose_short_numbers_differ(queue, clock):
    for n, code in ((59476, 502), (59480, 404), (59481, 502), (59490, 404), (59491, 503)):
        dead_job(queue, "invoice", f"RuntimeError: HTTP {code} for invoice INV-{n}")
    dead_job(queue, "invoice", "lease expired at 2026-12-01 21:06:37 UTC (42s before it was "
             "reaped) with no heartbeat from its worker")
    dead_job(queue, "invoice", "lease expired at 2026-12-02 03:00:01 UTC (1m05s before it was "
             "reaped) with no heartbeat from its worker")
    dead_job(queue, "invoice", "ConnectionError: worker app-1-4242-ab12 lost job 9f2e0a1c")
    dead_job(queue, "invoice", "ConnectionError: worker app-1-4243-cd34 lost job 0b7e77f1")
    groups = {g.key: g.count for g in queue.dead_groups()}
    assert groups == {
        "RuntimeError: HTTP 502 for invoice INV-#": 2,
        "RuntimeError: HTTP 404 for invoice INV-#": 2,
        "RuntimeError: HTTP 503 for invoice INV-#": 1,
        "lease expired at # UTC (# before it was reaped) with no heartbeat from its worker": 2,
        "ConnectionError: worker app-1-#-# lost job #": 2,
    }
