"""The worker registry: register, beat, deregister, list."""
import pytest

from jobq_core import PoolKind, WorkerInfo, WorkerState


def by_id(queue) -> dict[str, WorkerInfo]:
    return {w.id: w for w in queue.workers()}


def test_a_registered_worker_is_listed_with_what_it_said_about_itself(queue, clock):
    assert queue.workers() == []
    queue.register_worker("w-1", host="app-1", pid=4242, queues=["mail", "crm"], concurrency=8)
    queue.register_worker("w-2", host="app-2", pid=77, queues=None, concurrency=1)
    now = clock.now()
    assert by_id(queue) == {
        "w-1": WorkerInfo("w-1", "app-1", 4242, ("mail", "crm"), 8, now, now, 0),
        "w-2": WorkerInfo("w-2", "app-2", 77, None, 1, now, now, 0),
    }


def test_a_beat_updates_last_seen_and_busy_and_silence_makes_a_worker_late_then_lost(
        queue, clock):
    queue.register_worker("w-1", host="h", pid=1, queues=None, concurrency=4)
    started = clock.now()
    clock.advance(5)
    queue.beat_worker("w-1", busy=3)
    w = by_id(queue)["w-1"]
    assert (w.started_at, w.last_seen, w.busy) == (started, started + 5, 3)
    clock.advance(20)
    w = by_id(queue)["w-1"]
    assert w.state(clock.now(), beat=5) == WorkerState.LOST
    assert w.state(clock.now(), beat=10) == WorkerState.LATE
    assert w.state(clock.now(), beat=60) == WorkerState.OK


def test_registering_the_same_id_again_replaces_the_entry(queue, clock):
    queue.register_worker("w-1", host="old", pid=1, queues=["a"], concurrency=1)
    clock.advance(60)
    queue.register_worker("w-1", host="new", pid=2, queues=["b"], concurrency=2)
    assert [(w.host, w.pid, w.queues, w.concurrency, w.started_at) for w in queue.workers()] == [
        ("new", 2, ("b",), 2, clock.now())]


def test_a_deregistered_worker_is_gone_and_the_others_stay(queue):
    for name in ("w-1", "w-2"):
        queue.register_worker(name, host="h", pid=1, queues=None, concurrency=1)
    queue.deregister_worker("w-1")
    assert list(by_id(queue)) == ["w-2"]
    queue.deregister_worker("w-1")  # already gone: nothing to do, no error
    assert queue.beat_worker("w-1", busy=1) is False  # a beat does not bring it back
    assert queue.beat_worker("w-2", busy=1) is True
    assert list(by_id(queue)) == ["w-2"]


def test_the_registry_is_shared_by_every_queue_on_the_database(open_queue):
    a, b = open_queue(), open_queue()
    a.register_worker("w-1", host="h", pid=1, queues=None, concurrency=1)
    assert [w.id for w in b.workers()] == ["w-1"]
    b.deregister_worker("w-1")
    assert a.workers() == []


def test_a_worker_is_judged_by_the_heartbeat_interval_it_recorded(queue, clock):
    queue.register_worker("fast", host="h", pid=1, queues=None, concurrency=1,
                          beat_interval=2.0, lease=6.0)
    queue.register_worker("old", host="h", pid=2, queues=None, concurrency=1)  # none recorded
    w = by_id(queue)
    assert (w["fast"].beat_interval, w["fast"].lease) == (2.0, 6.0)
    assert (w["old"].beat_interval, w["old"].lease) == (None, None)
    clock.advance(6)  # three of its beats missed; the assumed 10 s beat is not
    w = by_id(queue)
    assert w["fast"].state(clock.now(), beat=10) == WorkerState.LOST
    assert w["old"].state(clock.now(), beat=10) == WorkerState.OK


def test_a_silent_worker_is_forgotten_after_five_minutes_unless_it_beat_meanwhile(queue, clock):
    queue.register_worker("gone", host="h", pid=1, queues=None, concurrency=1,
                          beat_interval=2.0)
    queue.register_worker("slow", host="h", pid=2, queues=None, concurrency=1,
                          beat_interval=60.0)  # ten of its beats: 10 minutes
    clock.advance(301)
    assert list(by_id(queue)) == ["slow"]  # not listed any more, though still stored
    assert [w.id for w in queue.workers(forgotten=True)] == ["gone", "slow"]
    assert queue.forget_silent_workers() == 1
    assert [w.id for w in queue.workers(forgotten=True)] == ["slow"]
    read = queue.workers()
    queue.beat_worker("slow")  # it beat after being read: forgetting that read keeps it
    assert queue.forget_workers(read) == 0
    assert list(by_id(queue)) == ["slow"]


def test_the_reaper_forgets_silent_workers(queue, clock):
    from jobq_core.maintenance import Reaper

    queue.register_worker("gone", host="h", pid=1, queues=None, concurrency=1)
    clock.advance(299)
    Reaper(queue).run_once()
    assert [w.id for w in queue.workers(forgotten=True)] == ["gone"]
    clock.advance(2)
    Reaper(queue).run_once()
    assert queue.workers(forgotten=True) == []


def test_a_worker_records_its_pool_and_a_process_pools_beats_record_each_child(queue):
    queue.register_worker("w-t", host="h", pid=1, queues=None, concurrency=4, pool="thread")
    queue.register_worker("w-p", host="h", pid=2, queues=None, concurrency=2, pool="process")
    assert (by_id(queue)["w-t"].pool, by_id(queue)["w-t"].children) == ("thread", ())
    assert by_id(queue)["w-p"].children == ()
    queue.beat_worker("w-p", busy=1, children=[(101, "busy", 42), (102, "idle", None)])
    w = by_id(queue)["w-p"]
    assert (w.pool, w.children, w.busy) == ("process", ((101, "busy", 42), (102, "idle", None)), 1)
    queue.beat_worker("w-p", busy=0)  # a beat without children keeps the last ones
    assert by_id(queue)["w-p"].children == ((101, "busy", 42), (102, "idle", None))
    queue.register_worker("w-old", host="h", pid=3, queues=None, concurrency=1)
    assert (by_id(queue)["w-old"].pool, by_id(queue)["w-old"].children) == (None, None)


def test_a_pool_kind_is_recorded_as_its_string_and_an_unknown_pool_is_refused(queue):
    queue.register_worker("w-p", host="h", pid=1, queues=None, concurrency=2,
                          pool=PoolKind.PROCESS)
    recorded = by_id(queue)["w-p"].pool
    assert recorded == "process" and recorded == PoolKind.PROCESS
    with pytest.raises(ValueError, match="pool must be 'thread' or 'process', got 'fork'"):
        queue.register_worker("w-f", host="h", pid=2, queues=None, concurrency=1, pool="fork")
    assert "w-f" not in by_id(queue)
