"""Lag is the wait of jobs that could run: ready jobs held on purpose (their queue paused,
their key held by ordering or by its key limit) are counted apart (``QueueStats.held``,
the ``jobq_queue_held_jobs`` gauge) and left out of the lag (``oldest_pending_at``,
``jobq_queue_lag_seconds``), so an autoscaler does not add workers that could not start
them."""
from __future__ import annotations

from jobq_core.observability.prometheus import read_gauges


def test_a_paused_queues_ready_jobs_are_held_not_lagging(queue, clock):
    start = clock.now()
    queue.enqueue_many([{"kind": "k", "queue": "paused"} for _ in range(2)])
    queue.enqueue("k", queue="paused", delay=3600)  # not due: neither held nor lagging
    queue.enqueue("k", queue="open")
    queue.pause("paused")
    clock.advance(60)
    stats = queue.stats()
    paused, open_ = stats.queues["paused"], stats.queues["open"]
    assert (paused.pending, paused.held, paused.oldest_pending_at) == (3, 2, None)
    assert (open_.held, open_.oldest_pending_at) == (0, start)
    assert stats.oldest_pending_at == start
    gauges = read_gauges(queue)
    assert gauges.lag == {"paused": 0.0, "open": 60.0}
    assert gauges.held == {"paused": 2, "open": 0}

    queue.resume("paused")
    paused = queue.stats().queues["paused"]
    assert (paused.held, paused.oldest_pending_at) == (0, start)


def test_jobs_behind_a_held_key_are_held_and_the_next_free_key_sets_the_lag(queue, clock):
    queue.set_limit("ordered", ordered=True)
    queue.enqueue_many([{"kind": "k", "queue": "ordered", "key": "a"} for _ in range(3)])
    clock.advance(10)
    free = queue.enqueue("k", queue="ordered", key="b")
    unkeyed = queue.enqueue("k", queue="ordered")
    assert queue.claim("w", queues=["ordered"]).key == "a"  # holds "a" for the two after it
    clock.advance(50)
    q = queue.stats().queues["ordered"]
    assert (q.pending, q.held) == (4, 2)
    assert q.oldest_pending_at == queue.get(free).run_at  # the oldest of "a" is held
    assert read_gauges(queue).lag["ordered"] == 50.0

    queue.claim_many("w", 2, queues=["ordered"])  # "b" and the unkeyed job start
    assert queue.get(unkeyed).status == "running"
    q = queue.stats().queues["ordered"]
    assert (q.pending, q.held, q.oldest_pending_at) == (2, 2, None)
    assert read_gauges(queue).lag["ordered"] == 0.0


def test_a_key_at_its_key_concurrency_holds_its_other_jobs(queue, clock):
    queue.set_limit("keyed", key_concurrency=1)
    queue.enqueue_many([{"kind": "k", "queue": "keyed", "key": "x"} for _ in range(3)])
    queue.claim("w", queues=["keyed"])
    clock.advance(30)
    q = queue.stats().queues["keyed"]
    assert (q.pending, q.held, q.oldest_pending_at) == (2, 2, None)
    queue.set_limit("keyed", key_concurrency=2)  # room for one more: none is held
    q = queue.stats().queues["keyed"]
    assert q.held == 0 and q.oldest_pending_at == queue.get(2).run_at
