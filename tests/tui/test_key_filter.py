"""``key:`` in the monitor's filter: a concurrency key's jobs in every job view (the
database narrows by it), and the detail screen shows a job's key."""
import pytest

from conftest import make_app, settle
from jobq_core import Queue
from jobq_core.presentation.views.filters import parse_filter
from jobq_tui.screens import DetailScreen


def ids(app):
    t = app.table()
    return {int(t.get_row_at(i)[0].plain.lstrip("⊘ ")) for i in range(t.row_count)}


def test_key_is_a_filter_term():
    f = parse_filter('key:"customer:7" queue:mail late')
    assert (f.key, f.queue, f.words) == ("customer:7", "mail", ("late",))


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_a_key_filter_narrows_the_all_running_and_dead_views_to_that_keys_jobs(
        tmp_path, clock):
    db = tmp_path / "jobs.db"
    with Queue(db, clock=clock) as q:
        mine = [q.enqueue("hook.send", key="customer:7") for _ in range(3)]
        q.enqueue("hook.send", key="customer:70")
        q.enqueue("hook.send")
        running = q.claim("w1")  # the first of customer:7
        dead = q.enqueue("hook.send", key="customer:7", max_attempts=1, queue="hooks")
        other = q.enqueue("hook.send", key="customer:8", max_attempts=1, queue="hooks")
        for job_id in (dead, other):  # in enqueue order
            job = q.claim("w1", queues=["hooks"])
            assert job.id == job_id
            q.fail(job.id, job.token, "HTTP 502")
    app = make_app(db, clock)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("6")  # All
        await settle(pilot)
        await pilot.press("/", *'key:"customer:7"', "enter")
        await settle(pilot)
        assert ids(app) == {*mine, dead}
        await pilot.press("1")  # Running
        await settle(pilot)
        assert ids(app) == {running.id}
        await pilot.press("5", "d")  # Dead, one row per job
        await settle(pilot)
        assert ids(app) == {dead}
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert "customer:7" in str(app.screen.query_one("#detail-body").render())
