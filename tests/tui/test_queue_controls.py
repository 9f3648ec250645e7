"""Queue controls and schedules in the monitor: paused queues marked in the header and the
Queues view, limits beside the running count, ``P`` pausing or resuming the selected
queue after a confirmation, schedules with a countdown to their next tick."""
import pytest

from conftest import make_app, settle
from jobq_core import Queue
from jobq_tui.screens import ConfirmScreen


def rows(app):
    t = app.table()
    return [[c.plain for c in t.get_row_at(i)] for i in range(t.row_count)]


def header(app) -> str:
    return str(app.query_one("#header").render())


async def test_a_paused_queue_is_marked_in_the_header_and_limits_show_beside_running(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert "⏸ export paused" in header(app)
        assert "no live worker" not in header(app)  # its ready job waits on purpose
        await pilot.press("2")
        await settle(pilot)
        by_name = {r[0]: r for r in rows(app)}
        assert by_name["export"][1] == "⏸ paused"
        assert by_name["mail"][4] == "3/3 limit" and by_name["mail"][7] == "≤3 running"
        assert by_name["crm"][7] == "100/m" and by_name["crm"][1] == "active"
        assert by_name["mail"][3] == "0"  # HELD: none of its jobs is held on purpose


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_P_pauses_the_selected_queue_after_confirmation_and_P_again_resumes_it(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        assert app.table().current_row().queue == "crm"
        await pilot.press("P")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await settle(pilot)
        with Queue(db, clock=clock) as q:
            assert not q.queues()["crm"].paused
        await pilot.press("P", "y")
        await settle(pilot)
        assert "queue 'crm' paused" in str(app.query_one("#status").render())
        with Queue(db, clock=clock) as q:
            assert q.queues()["crm"].paused
        assert "⏸ 2 queues paused" in header(app)
        await pilot.press("P", "y")
        await settle(pilot)
        with Queue(db, clock=clock) as q:
            assert not q.queues()["crm"].paused


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_P_is_hidden_in_a_read_only_monitor_and_outside_the_queues_view(db, clock):
    app = make_app(db, clock, read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("2", "P")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("1", "P")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)


async def test_schedules_count_down_to_their_next_tick_without_reading_again(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("7")
        await settle(pilot)
        by_kind = {r[0]: r for r in rows(app)}
        assert by_kind["refresh_rates"][2] == "every 300s"
        assert by_kind["refresh_rates"][4] == "5:00"  # the clock stands on a 300 s tick
        clock.advance(61)
        app._beat()
        await settle(pilot)
        by_kind = {r[0]: r for r in rows(app)}
        assert by_kind["refresh_rates"][4] == "3:59"
        assert by_kind["nightly_report"][4] == "2:58:59"


async def test_a_paused_queues_ready_jobs_show_as_held_with_no_lag(db, clock):
    with Queue(db, clock=clock) as q:
        for _ in range(4):
            q.enqueue("k", queue="held-here")
        q.pause("held-here")
    app = make_app(db, clock)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        row = {r[0]: r for r in rows(app)}["held-here"]
        assert (row[2], row[3], row[6]) == ("4", "4", "-")  # PENDING, HELD, LAG


@pytest.mark.slow  # two pilot sessions, at 80 and 120 columns
async def test_limits_the_code_declares_show_beside_the_database_s_when_they_differ(db, clock):
    from jobq_core import QueueLimits

    with Queue(db, clock=clock) as q:  # as a worker starts with registry.queue(...)
        q.declare_limits({"mail": QueueLimits(concurrency=5), "crm": QueueLimits(rate=None)})
        q.set_limit("mail", concurrency=3)  # then an operator's jobq limit
        q.set_limit("crm", rate="100/m")
        q.declare_limits({"crm": QueueLimits(rate=q.queues()["crm"].rate)})
    for width in (80, 120):
        app = make_app(db, clock)
        async with app.run_test(size=(width, 30)) as pilot:
            await settle(pilot)
            await pilot.press("2")
            await settle(pilot)
            by_name = {r[0]: r for r in rows(app)}
            assert by_name["mail"][1] == "≠ code"
            assert by_name["crm"][1] == ("active" if width == 120 else "")
            if width == 120:
                assert by_name["mail"][7] == "≤3 running ≠ code: ≤5 running"
                assert by_name["crm"][7] == "100/m"
