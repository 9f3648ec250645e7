"""Periodic schedules in the store: a tick is recorded in the transaction of its job, so
each tick enqueues one job however many workers try."""
from __future__ import annotations

import threading

from jobq_core import Registry


def _schedule(**options):
    registry = Registry()
    return registry.periodic("tick", **({"every": 10} | options))


def test_a_tick_enqueues_one_job_at_the_tick_time_and_only_once(queue, open_queue, clock):
    s = _schedule(payload={"a": 1}, queue="cron", priority=3, max_attempts=2)
    queue.register_schedule(s, since=100.0)
    job_id = queue.enqueue_tick(s, 110.0)
    assert open_queue().enqueue_tick(s, 110.0) is None
    assert queue.enqueue_tick(s, 100.0) is None  # an older tick: never
    job = queue.get(job_id)
    assert (job.kind, job.payload, job.queue, job.priority, job.max_attempts, job.run_at) == (
        "tick", {"a": 1}, "cron", 3, 2, 110.0)
    [info] = queue.schedules()
    assert (info.key, info.kind, info.every, info.last_tick, info.last_job) == (
        s.key, "tick", 10.0, 110.0, job_id)


def test_the_tick_survives_its_job_finishing(queue, clock):
    s = _schedule()
    queue.register_schedule(s, since=0.0)
    job_id = queue.enqueue_tick(s, 10.0)
    job = queue.claim("w")
    assert job.id == job_id
    queue.complete(job.id, job.token)
    queue.prune(0)
    assert queue.enqueue_tick(s, 10.0) is None


def test_registering_again_keeps_the_recorded_tick(queue):
    s = _schedule(cron="*/5 * * * *", every=None, tz="Europe/Paris")
    queue.register_schedule(s, since=50.0)
    queue.enqueue_tick(s, 300.0)
    queue.register_schedule(s, since=900.0)
    [info] = queue.schedules()
    assert (info.cron, info.tz, info.last_tick, info.spec) == (
        "*/5 * * * *", "Europe/Paris", 300.0, "cron */5 * * * * tz Europe/Paris")


def test_racing_workers_enqueue_each_tick_once(queue, open_queue):
    s = _schedule()
    queue.register_schedule(s, since=0.0)
    queues = [open_queue() for _ in range(4)]
    won: list[int] = []
    lock = threading.Lock()

    def worker(q):
        for tick in range(10, 210, 10):
            job_id = q.enqueue_tick(s, float(tick))
            if job_id is not None:
                with lock:
                    won.append(tick)

    threads = [threading.Thread(target=worker, args=(q,)) for q in queues]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    runs = sorted(j.run_at for j in queue.list(limit=1000))
    assert len(runs) == len(set(runs)) == len(won)  # no tick twice
    assert runs[-1] == 200.0


def test_a_forgotten_schedule_is_gone_and_a_worker_that_declares_it_records_it_again(queue):
    s = _schedule()
    queue.register_schedule(s, since=0.0)
    queue.enqueue_tick(s, 10.0)
    assert queue.forget_schedule(s.key) is True
    assert queue.schedules() == [] and queue.forget_schedule(s.key) is False
    queue.register_schedule(s, since=20.0)
    [info] = queue.schedules()
    assert (info.last_tick, info.last_job) == (20.0, None)


def test_a_tick_recorded_in_the_future_is_rewound_once_and_then_ticks_go_on(queue, open_queue):
    s = _schedule()
    queue.register_schedule(s, since=100.0)
    queue.enqueue_tick(s, 86_500.0)  # written by a clock a day ahead
    assert queue.enqueue_tick(s, 120.0) is None  # blocked by it
    assert queue.rewind_schedule(s, 86_500.0, 110.0)
    assert not open_queue().rewind_schedule(s, 86_500.0, 110.0)  # another worker was first
    assert queue.enqueue_tick(s, 120.0) is not None
    assert queue.schedules()[0].last_tick == 120.0
