"""Schedules and queue controls as the worker sees them, in-process: tick arithmetic, the
scheduler's catch-up after downtime, burst mode with paused and limited queues."""
from __future__ import annotations

import logging
import time
from datetime import datetime, timezone

import pytest

from jobq_core import Queue, Registry, Worker
from jobq_core.maintenance import Scheduler
from jobq_core.testing import FakeClock


def _utc(*args) -> float:
    return datetime(*args, tzinfo=timezone.utc).timestamp()


def test_every_ticks_at_multiples_of_its_period_since_the_epoch():
    s = Registry().periodic("k", every=60)
    assert s.latest_tick(125.0) == 120.0 and s.next_tick(125.0) == 180.0
    assert s.latest_tick(120.0) == 120.0 and s.next_tick(120.0) == 180.0
    assert s.ticks_between(120.0, 480.0) == 5


def test_cron_ticks_in_utc_or_in_its_time_zone():
    s = Registry().periodic("k", cron="*/15 * * * *")
    assert s.latest_tick(_utc(2024, 1, 1, 10, 14, 59)) == _utc(2024, 1, 1, 10, 0)
    assert s.latest_tick(_utc(2024, 1, 1, 10, 15)) == _utc(2024, 1, 1, 10, 15)
    assert s.next_tick(_utc(2024, 1, 1, 10, 15)) == _utc(2024, 1, 1, 10, 30)
    assert s.ticks_between(_utc(2024, 1, 1, 10, 0), _utc(2024, 1, 1, 11, 0)) == 3
    paris = Registry().periodic("k", cron="0 9 * * *", tz="Europe/Paris")
    assert paris.next_tick(_utc(2024, 1, 1, 0, 0)) == _utc(2024, 1, 1, 8, 0)  # 9:00 CET


@pytest.mark.parametrize("options, message", [
    ({}, "exactly one"),
    ({"every": 5, "cron": "* * * * *"}, "exactly one"),
    ({"every": 0.5}, "at least 1 second"),
    ({"cron": "* * * *"}, "5 fields"),
    ({"cron": "61 * * * *"}, "bad cron"),
    ({"cron": "* * * * *", "tz": "Mars/Olympus"}, "unknown time zone"),
    ({"every": 5, "tz": "UTC"}, "cron= only"),
])
def test_bad_schedules_are_refused_when_declared(options, message):
    with pytest.raises(ValueError, match=message):
        Registry().periodic("k", **options)


def test_a_schedule_declared_twice_is_refused():
    r = Registry()
    r.periodic("k", every=5)
    r.periodic("k", every=5, payload={"other": 1})  # another payload: another schedule
    with pytest.raises(ValueError, match="declared twice"):
        r.periodic("k", every=5)


def test_a_new_schedule_starts_at_its_next_tick_and_each_tick_enqueues_once(db):
    clock = FakeClock(1000.5)
    r = Registry()
    r.periodic("k", every=10, payload={"n": 1})
    with Queue(db, clock=clock) as q:
        a, b = Scheduler(q, r.schedules()), Scheduler(q, r.schedules())
        assert a.run_once() == pytest.approx(9.5, abs=0.01)
        assert q.list() == []  # the tick at 1000 happened before anyone saw the schedule
        clock.set(1010.0)
        b.run_once()
        a.run_once()
        clock.advance(10.0)
        a.run_once()
        b.run_once()
        assert sorted(j.run_at for j in q.list()) == [1010.0, 1020.0]


def test_after_downtime_only_the_latest_missed_tick_is_enqueued_once_and_logged(db, caplog):
    clock = FakeClock(1000.0)
    r = Registry()
    r.periodic("k", every=10)
    with Queue(db, clock=clock) as q:
        Scheduler(q, r.schedules()).run_once()
        clock.set(1010.0)
        Scheduler(q, r.schedules()).run_once()
        clock.set(1500.0)  # no worker ran for 49 ticks
        with caplog.at_level(logging.DEBUG, "jobq.maintenance"):
            Scheduler(q, r.schedules()).run_once()
            Scheduler(q, r.schedules()).run_once()
            clock.set(1510.0)
            Scheduler(q, r.schedules()).run_once()
        assert sorted(j.run_at for j in q.list()) == [1010.0, 1500.0, 1510.0]
        assert "48 tick(s) missed" in caplog.text
        # the ticks' times as UTC times, never as raw Unix seconds
        assert "tick 1970-01-01 00:25:00 UTC)" in caplog.text
        assert "for the tick of 1970-01-01 00:25:10 UTC" in caplog.text
        assert "1500" not in caplog.text and "1510" not in caplog.text


def test_a_tick_recorded_by_a_clock_that_jumped_ahead_is_a_clock_fault_not_a_silence(
        db, caplog):
    clock = FakeClock(1000.0)
    r = Registry()
    r.periodic("k", every=10)
    with Queue(db, clock=clock) as q:
        Scheduler(q, r.schedules()).run_once()
        clock.set(1000.0 + 86400)  # the clock jumps a day ahead: that tick is recorded
        Scheduler(q, r.schedules()).run_once()
        clock.set(1020.0)  # and back
        with caplog.at_level(logging.WARNING, "jobq.maintenance"):
            Scheduler(q, r.schedules()).run_once()
            clock.set(1030.0)
            Scheduler(q, r.schedules()).run_once()
        assert sorted(j.run_at for j in q.list()) == [1020.0, 1030.0, 1000.0 + 86400]
        assert caplog.text.count("in the future") == 1  # said once, then on from now
        [row] = q.schedules()
        assert row.last_tick == 1030.0


def test_a_worker_that_does_not_lead_takes_no_tick_the_leader_took(db):
    """It looks FALLBACK seconds late: the tick the leader recorded a moment ago is newer
    than the one it would take, not a tick written by a clock that ran ahead."""
    clock = FakeClock(1000.3)
    r = Registry()
    r.periodic("k", every=1)
    with Queue(db, clock=clock) as q:
        leader = Scheduler(q, r.schedules(), leading=lambda: True)
        other = Scheduler(q, r.schedules(), leading=lambda: False, fallback=5.0)
        leader.run_once()  # registers the schedule
        for t in (1001.3, 1002.3, 1003.3, 1004.3, 1005.3, 1006.3, 1007.3):
            clock.set(t)
            leader.run_once()
            other.run_once()
        assert sorted(j.run_at for j in q.list()) == [1001.0 + i for i in range(7)]
        clock.set(1020.3)  # the leader is gone: the other takes the ticks, 5 s late
        other.run_once()
        assert max(j.run_at for j in q.list()) == 1015.0
        assert q.count() == 8


def _burst(db, registry, **kwargs) -> tuple[Worker, float]:
    started = time.monotonic()
    with Queue(db) as q:
        w = Worker(q, registry, **kwargs)
        w.run(burst=True, handle_signals=False)
    return w, time.monotonic() - started


def test_burst_leaves_a_paused_queue_pending_and_exits(db):
    r = Registry()
    r.task("k")(lambda p: p)
    with Queue(db) as q:
        q.enqueue_many([("k", 1), {"kind": "k", "queue": "held"}])
        q.pause("held")
        w, _ = _burst(db, r, concurrency=2)
        assert w.counts["succeeded"] == 1
        assert q.count("pending", queue="held") == 1


def test_burst_waits_for_a_rate_limited_queue_until_its_jobs_have_run(db):
    r = Registry()
    r.task("k")(lambda p: p)
    with Queue(db) as q:
        q.enqueue_many([{"kind": "k", "queue": "api"} for _ in range(6)])
        q.set_limit("api", rate="3/s")
        w, took = _burst(db, r, concurrency=4)
        assert w.counts["succeeded"] == 6
        assert 0.9 < took < 5
        starts = sorted(j.started_at for j in q.list(limit=10))
        assert starts[3] - starts[0] >= 0.99  # the 4th start waited for the next window
