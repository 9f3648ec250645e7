"""``R`` in the Running view takes a stuck job back, after a confirmation that says what
it does: the old holder is fenced out."""
import pytest

from conftest import make_app, settle
from jobq_core import LeaseLost, Queue
from jobq_tui.screens import ConfirmScreen


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_R_in_the_running_view_takes_the_selected_job_back_after_confirmation(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("1")
        await settle(pilot)
        row = app.table().current_row()
        with Queue(db, clock=clock) as q:
            held = q.get(row.job_id)
        await pilot.press("R")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await settle(pilot)
        with Queue(db, clock=clock) as q:
            assert q.get(held.id).status == "running"
        await pilot.press("R", "y")
        await settle(pilot)
        assert f"job {held.id} taken back" in str(app.query_one("#status").render())
    with Queue(db, clock=clock) as q:
        assert q.get(held.id).status == "pending"
        with pytest.raises(LeaseLost):
            q.complete(held.id, held.token)


async def test_R_is_hidden_in_a_read_only_monitor(db, clock):
    app = make_app(db, clock, read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("1", "R")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
