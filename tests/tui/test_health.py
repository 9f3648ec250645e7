"""The health the monitor shows is true: what the data says at the data's time, each worker
judged by its own heartbeat, rows marked by their worker's state, rates that track."""
import re

import pytest

from conftest import make_app, settle
from jobq_core import Queue
from jobq_core.testing import FakeClock
from jobq_tui.source import Unavailable

T0 = 1_767_225_600.0


def rows(app):
    t = app.table()
    return [[c.plain for c in t.get_row_at(i)] for i in range(t.row_count)]


def header(app):
    return str(app.query_one("#header").render())


async def test_paused_countdowns_stop_at_the_datas_time_and_raise_no_new_alarm(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert [r[6] for r in rows(app)][:2] == ["✗ EXPIRED 0:42 ago", "! 0:03"]
        await pilot.press("p")
        clock.advance(10)
        app._beat()
        await pilot.pause()
        # The second lease would have run out 7 s ago by the clock: the data cannot say so.
        assert [r[6] for r in rows(app)][:2] == ["✗ EXPIRED 0:42 ago", "! 0:03"]
        text = header(app)
        assert "⏸ PAUSED" in text and "10s ago · frozen" in text
        assert "! 1 expired lease" in text and "expired leases" not in text
        await pilot.press("p")  # live again: read now, judged now
        await settle(pilot)
        assert "frozen" not in header(app)
        assert "! 2 expired leases" in header(app)


@pytest.mark.slow  # seconds of real time (processes, connections, clocks)
async def test_while_the_database_cannot_be_read_countdowns_freeze_too(db, clock, monkeypatch):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)

        def locked(*a, **k):
            raise Unavailable("jobs.db: the database stayed locked past the busy timeout")

        monkeypatch.setattr(app.source, "poll", locked)
        clock.advance(30)
        app.request_poll()
        await settle(pilot)
        assert [r[6] for r in rows(app)][:2] == ["✗ EXPIRED 0:42 ago", "! 0:03"]
        assert "frozen" in header(app) and "! 1 expired lease" in header(app)


def _one_worker_db(path, clock, *, beat_interval, jobs=1, concurrency=4):
    with Queue(path, clock=clock) as q:
        q.register_worker("w-fast", host="h", pid=7, queues=None, concurrency=concurrency,
                          beat_interval=beat_interval, lease=3 * beat_interval)
        q.enqueue_many([("work", {"n": i}) for i in range(jobs)])
        q.claim_many("w-fast", jobs, lease=3 * beat_interval)


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_a_worker_is_late_and_lost_by_its_own_beat_and_its_jobs_rows_say_so(tmp_path):
    clock = FakeClock(T0)
    path = tmp_path / "jobs.db"
    _one_worker_db(path, clock, beat_interval=2.0)
    clock.advance(3.5)  # 1.75 beats of 2 s: late; by the assumed 10 s beat it would be ok
    app = make_app(path, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert rows(app)[0][3] == "w-fast ◐ late"
        await pilot.press("6")
        await settle(pilot)
        assert rows(app)[0][1] == "◐ running, worker late"
        clock.advance(2)  # 2.75 beats: lost
        app.request_poll(force=True)
        await pilot.press("3")
        await settle(pilot)
        assert rows(app)[0][2:4] == ["✗ lost", "1/4 stale"]
        assert "! 1 lost worker" in header(app)
        await pilot.press("1")
        await settle(pilot)
        assert rows(app)[0][3] == "w-fast ✗ lost"


@pytest.mark.slow  # seconds of real time (processes, connections, clocks)
async def test_a_lost_workers_busy_is_the_jobs_it_still_holds_not_its_first_registration(
        tmp_path):
    clock = FakeClock(T0)
    path = tmp_path / "jobs.db"
    _one_worker_db(path, clock, beat_interval=2.0, jobs=4)  # died before its first beat
    clock.advance(6)
    app = make_app(path, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        assert rows(app)[0][2:4] == ["✗ lost", "4/4 stale"]


async def test_ready_jobs_and_no_live_worker_is_a_header_warning(tmp_path):
    clock = FakeClock(T0)
    path = tmp_path / "jobs.db"
    with Queue(path, clock=clock) as q:
        q.enqueue("later", delay=60)  # scheduled only: nothing is waiting yet
    app = make_app(path, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "no live worker" not in header(app)
        with Queue(path, clock=clock) as q:
            q.enqueue("now", queue="mail")
            q.register_worker("w1", host="h", pid=1, queues=["media"], concurrency=1,
                              beat_interval=1.0)
        app.request_poll(force=True)
        await settle(pilot)
        assert "! no live worker for mail" in header(app)
        clock.advance(3)  # w1 is lost now: nobody at all
        app.request_poll(force=True)
        await settle(pilot)
        assert "! no live worker" in header(app) and "for mail" not in header(app)
        with Queue(path, clock=clock) as q:
            q.register_worker("w2", host="h", pid=2, queues=None, concurrency=1)
        app.request_poll(force=True)
        await settle(pilot)
        assert "no live worker" not in header(app)


@pytest.mark.slow  # seconds of real time (processes, connections, clocks)
async def test_the_headline_rate_tracks_the_last_seconds_and_falls_to_zero_when_work_stops(
        tmp_path):
    clock = FakeClock(T0 - 10)
    path = tmp_path / "jobs.db"
    with Queue(path, clock=clock) as q:
        q.enqueue_many([("work", None)] * 2000)
        while clock.now() < T0:  # 500 jobs a second for the last 4 s before T0
            clock.advance(0.01)
            if clock.now() >= T0 - 4:
                for job in q.claim_many("w", 5):
                    q.complete(job.id, job.token)
    app = make_app(path, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        # 500/s: not 0 (the 10 s bucket under way), not a mean over a minute
        assert 480 <= float(re.search(r"([\d.]+)/s ok", header(app)).group(1)) <= 520
        clock.advance(10)  # nothing finished since: the data has not changed
        app.request_poll()
        await settle(pilot)
        assert app.snapshot.reused
        assert "0.0/s ok" in header(app)


def test_the_rate_counts_the_second_under_way_for_what_it_is_and_tracks_within_two_seconds():
    from jobq_core import Throughput
    from jobq_tui.source import rates

    def seconds(*counts, last=T0):  # one-second buckets, the last one the second ``last``
        n = len(counts)
        return Throughput(last - n + 1, 1.0, counts, (0,) * n, (0,) * n)

    # 500 a second, half of T0's second gone (250 so far): 500/s, not 437.5 as if the
    # second under way were a whole one, nor the 500/s of the last full seconds by luck
    assert rates(seconds(500, 500, 500, 500, 500, 250), T0 + 0.5) == (500.0, 0.0)
    assert rates(seconds(0, 0, 0, 0, 0, 250), T0 + 0.5)[0] == 100.0  # a drain starting
    # ... seen at its whole rate two seconds in, and at zero two seconds after it ends
    assert rates(seconds(0, 0, 0, 0, 500, 500, last=T0 + 1), T0 + 2.0)[0] == 500.0
    assert rates(seconds(500, 500, 500, 500, 0, 0, last=T0 + 1), T0 + 2.0)[0] == 0.0


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_X_in_the_workers_view_forgets_the_lost_workers_after_confirmation(db, clock):
    from jobq_tui.screens import ConfirmScreen

    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("X")  # not in the Running view
        assert "open the Workers view" in str(app.query_one("#status").render())
        await pilot.press("3", "X")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert "Forget 1 lost worker?" in str(app.screen.message) and "w3" in str(
            app.screen.message)
        await pilot.press("y")
        await settle(pilot)
        assert "forgot 1 lost worker" in str(app.query_one("#status").render())
        assert [r[0] for r in rows(app)] == ["w1", "w2"]
        assert "lost worker" not in header(app)
    with Queue(db, clock=clock) as q:
        assert [w.id for w in q.workers(forgotten=True)] == ["w1", "w2"]
    app = make_app(db, clock, read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("3", "X")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_dead_groups_keep_status_codes_apart_and_R_retries_only_its_group(tmp_path):
    from jobq_tui.screens import ConfirmScreen

    clock = FakeClock(T0)
    path = tmp_path / "jobs.db"
    errors = {}  # job id -> error
    with Queue(path, clock=clock, max_attempts=1) as q:
        # The same start up to the invoice number: a substring cannot tell these apart.
        for n, code in ((59476, 502), (59477, 404), (59478, 502), (59479, 404), (59480, 404)):
            q.enqueue("invoice.sync", {"n": n})
            job = q.claim("w")
            errors[job.id] = f"RuntimeError: invoice INV-{n} failed: HTTP {code}"
            q.fail(job.id, job.token, errors[job.id])
    app = make_app(path, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        assert [(r[0], r[-1].rsplit(" ", 1)[-1]) for r in rows(app)] == [("3", "404"),
                                                                         ("2", "502")]
        await pilot.press("j", "enter")  # the 502 group's jobs
        await settle(pilot)
        assert sorted(int(r[0]) for r in rows(app)) == [1, 3]
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("d")  # grouped again
        await settle(pilot)
        await pilot.press("j", "R")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert str(app.screen.message).startswith("Retry 2 dead jobs?")
        await pilot.press("y")
        await settle(pilot)
    with Queue(path, clock=clock) as q:
        assert {j.id for j in q.list("pending")} == {1, 3}
        assert {j.id for j in q.list("dead")} == {2, 4, 5}


async def test_a_costly_read_slows_the_refresh_to_keep_the_monitor_light_and_says_so(
        db, clock, monkeypatch):
    from dataclasses import replace

    app = make_app(db, clock, interval=1.0)
    real = app.source.poll

    def costly(*a, **k):  # as a read during a drain of thousands of jobs a second
        snap = real(*a, **k)
        return snap if snap.reused else replace(snap, read_cpu=0.1)

    monkeypatch.setattr(app.source, "poll", costly)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.request_poll(force=True)
        await settle(pilot)
        # 0.1 s of CPU is 2 % of a core every 5 s; drawing what was read adds a little
        assert 5.0 <= app.effective_interval < 10.0
        assert f"● live {app.effective_interval:g}s" in header(app)
        assert "frozen" not in header(app)


async def test_a_costly_draw_slows_the_refresh_too(db, clock):
    """What a refresh costs is its read and its draw (every row new in a drain, on a big
    screen): both count against the monitor's share of a core."""
    app = make_app(db, clock, interval=1.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.pacer.draws = (0.1, 0.1)  # as the last two draws had cost
        app.request_poll(force=True)
        await settle(pilot)
        assert app.effective_interval >= 5.0  # 0.1 s of CPU is 2 % of a core every 5 s
        assert f"● live {app.effective_interval:g}s" in header(app)
        # the draws measured since are those of this small screen: the refresh speeds up
        app.request_poll(force=True)
        await settle(pilot)
        app.request_poll(force=True)
        await settle(pilot)
        assert app.pacer.draws[1] < 0.1


async def test_while_no_fresh_read_comes_countdowns_freeze_at_the_datas_time(db, clock):
    """A read that hangs (a stalled disk, a network link gone quiet) is not an error: the
    data just grows old. Past the stale time the screen stops at the data's time too."""
    import threading

    app = make_app(db, clock, interval=1.0)
    released = threading.Event()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        real = app.source.poll

        def hangs(*a, **k):
            released.wait(30)
            return real(*a, **k)

        app.source.poll = hangs
        try:
            app.request_poll(force=True)
            clock.advance(3)  # within the stale time: live, judged now
            app.render_all()
            assert "frozen" not in header(app)
            assert [r[6] for r in rows(app)][:2] == ["✗ EXPIRED 0:45 ago", "✗ EXPIRED 0:00 ago"]
            clock.advance(27)  # 30 s without a fresh read
            app.render_all()
            text = header(app)
            assert "30s ago · frozen" in text and "● live" in text
            assert [r[6] for r in rows(app)][:2] == ["✗ EXPIRED 0:42 ago", "! 0:03"]
            assert "! 1 expired lease" in text and "! 2 expired" not in text
        finally:
            released.set()
        await settle(pilot)
        assert "frozen" not in header(app)


@pytest.mark.slow  # seconds of real time (processes, connections, clocks)
async def test_lost_workers_are_forgotten_after_five_minutes_deregistered_ones_at_once(
        tmp_path):
    from jobq_core.types import FORGET_AFTER

    clock = FakeClock(T0)
    path = tmp_path / "jobs.db"
    with Queue(path, clock=clock) as q:
        q.register_worker("w-dead", host="h", pid=1, queues=None, concurrency=1,
                          beat_interval=10.0, lease=30.0)
        q.register_worker("w-leaving", host="h", pid=2, queues=None, concurrency=1,
                          beat_interval=10.0, lease=30.0)
    app = make_app(path, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        assert [r[0] for r in rows(app)] == ["w-dead", "w-leaving"]
        with Queue(path, clock=clock) as q:
            q.deregister_worker("w-leaving")  # a worker that stops says so: gone at once
        app.request_poll()
        await settle(pilot)
        assert [r[0] for r in rows(app)] == ["w-dead"]
        clock.advance(FORGET_AFTER - 1)  # lost, still listed (and warned about)
        app.request_poll(force=True)
        await settle(pilot)
        assert rows(app)[0][:3] == ["w-dead", "h:1", "✗ lost"]
        assert "! 1 lost worker" in header(app)
        clock.advance(2)  # five minutes without a beat: forgotten
        app.request_poll(force=True)
        await settle(pilot)
        assert rows(app) == [] and "lost worker" not in header(app)


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_try_shows_the_limit_that_applies_the_tasks_when_it_is_lower(tmp_path):
    """A job enqueued with 20 attempts, of a task that allows 3: a worker claims it with
    its tasks' limits (as ``Worker`` does), and every view and the detail show n/3."""
    from jobq_tui.screens import DetailScreen

    clock = FakeClock(T0)
    path = tmp_path / "jobs.db"
    limits = {"invoice.sync": 3}
    with Queue(path, clock=clock, max_attempts=20) as q:
        q.enqueue("invoice.sync", {"n": 1})
        for _ in range(2):
            [job] = q.claim_many("w", 1, attempt_limits=limits)
            q.fail(job.id, job.token, "RuntimeError: HTTP 502", retry_in=0)
        [running] = q.claim_many("w", 1, attempt_limits=limits)
    app = make_app(path, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert rows(app)[0][4] == "3/3"  # Running
        await pilot.press("6")
        await settle(pilot)
        assert rows(app)[0][4] == "3/3"  # All
        with Queue(path, clock=clock) as q:
            q.fail(running.id, running.token, "RuntimeError: HTTP 502")
        app.request_poll(force=True)
        await pilot.press("5", "d")
        await settle(pilot)
        assert rows(app)[0][3] == "3/3"  # Dead: it died at its task's limit
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert "attempts  3/3" in str(app.screen.query_one("#detail-body").render())
    with Queue(path, clock=clock, max_attempts=20) as q:
        q.enqueue("invoice.sync", {"n": 2})
        [job] = q.claim_many("w", 1, attempt_limits=limits)
        q.fail(job.id, job.token, "RuntimeError: HTTP 502", retry_in=60)
    app = make_app(path, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        assert [r[3] for r in rows(app)] == ["1/3"]  # Retries


async def test_at_80_columns_the_most_severe_warning_is_whole(db, clock):
    """Two minutes on, every worker is lost, every lease has run out and jobs are ready:
    the header's first line holds more than 80 columns, and is cut at the least severe."""
    clock.advance(120)
    app = make_app(db, clock, interval=1.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        widget = app.query_one("#header")
        line = "".join(segment.text for segment in widget.render_line(0))
        assert line.rstrip().endswith("…")  # it is cut at the edge
        assert "! no live worker  ! " in line  # whole, and first
        assert line.index("expired") < line.index("lost")
