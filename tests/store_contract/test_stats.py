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
