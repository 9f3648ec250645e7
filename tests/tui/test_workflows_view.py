"""The monitor and job dependencies: the header counts waiting jobs, the All view filters
them, the detail names both ends and says why a job is not running."""
import pytest

from conftest import make_app, settle
from jobq_core import Queue
from jobq_tui.screens import DetailScreen

from test_app import rows, start, type_filter


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_waiting_jobs_are_counted_filtered_and_explained(tmp_path, clock):
    path = tmp_path / "flow.db"
    with Queue(path, clock=clock) as q:
        fetch = q.enqueue("report.fetch")
        parse = q.enqueue("report.parse", after=[fetch])
    app = make_app(path, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        assert "wait 1" in str(app.query_one("#header").render())
        await pilot.press("6")  # the All view
        await settle(pilot)
        await type_filter(pilot, "status:waiting")
        assert [r[0] for r in rows(app)] == [str(parse)]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.job_id == parse
        for _ in range(200):  # the detail reads in a thread of its own
            body = str(app.screen.query_one("#detail-body").render())
            if "waits on" in body:
                break
            await pilot.pause(0.02)
        assert f"waits on  {fetch} report.fetch (pending)" in body
        assert f"why  waiting: it waits on jobs {fetch} (pending)" in body
