"""The Workers view's POOL column (wide layout): the pool kind, and a process pool's
children by state at the worker's last beat."""
import pytest

from conftest import make_app, settle
from jobq_core import Queue
from jobq_core.testing import FakeClock


@pytest.mark.slow  # seconds of real time (processes, connections, clocks)
async def test_the_workers_view_shows_each_workers_pool_and_its_children(tmp_path):
    path, clock = tmp_path / "jobs.db", FakeClock()
    with Queue(path, clock=clock) as q:
        q.register_worker("w-proc", host="h", pid=1, queues=None, concurrency=3,
                          pool="process", beat_interval=10)
        q.beat_worker("w-proc", busy=2, children=[(11, "busy", 5), (12, "busy", 6),
                                                  (13, "idle", None)])
        q.register_worker("w-thread", host="h", pid=2, queues=None, concurrency=8,
                          pool="thread", beat_interval=10)
    app = make_app(path, clock)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await pilot.press("3")  # Workers
        await settle(pilot)
        t = app.table()
        keys = [c.key for c in app.shown.columns(False, app.wide)]
        pool = keys.index("pool")
        rows = [[c.plain for c in t.get_row_at(i)] for i in range(t.row_count)]
        cells = {row[0]: row[pool] for row in rows}
        assert cells == {"w-proc": "process 2 busy 1 idle", "w-thread": "thread"}
