"""The monitor on a PostgreSQL URL shows what it shows on SQLite: the same fixture built
in both stores renders the same rows in every view, and actions work."""
import pytest

import fixture_db
from conftest import make_app, settle
from jobq_core import Queue
from jobq_core.testing import FakeClock
from jobq_tui.main import main as tui_main

VIEWS = {"1": "running", "2": "queues", "3": "workers", "4": "retries", "5": "dead", "6": "all"}


@pytest.fixture
def pg_fixture(pg_url):
    clock = fixture_db.build(pg_url)
    return pg_url, clock


def rows(app):
    t = app.table()
    return [[c.plain for c in t.get_row_at(i)] for i in range(t.row_count)]


async def _every_view(path, clock):
    app = make_app(path, FakeClock(clock.now()))
    seen = {}
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for key, view in VIEWS.items():
            await pilot.press(key)
            await settle(pilot)
            assert app.view == view
            seen[view] = rows(app)
    app.source.close()
    return seen


@pytest.mark.slow  # every view on both stores
async def test_every_view_shows_the_same_rows_as_on_sqlite(pg_fixture, tmp_path):
    url, pg_clock = pg_fixture
    sqlite_clock = fixture_db.build(tmp_path / "jobs.db")
    assert sqlite_clock.now() == pg_clock.now()
    on_pg = await _every_view(url, pg_clock)
    on_sqlite = await _every_view(tmp_path / "jobs.db", sqlite_clock)
    assert on_pg == on_sqlite
    assert all(on_pg[v] for v in ("running", "queues", "retries", "dead", "all"))


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_retrying_a_dead_job_from_the_monitor_works_on_postgresql(pg_fixture):
    url, clock = pg_fixture
    app = make_app(url, FakeClock(clock.now()))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("5", "d")  # ungrouped: one row per dead job
        await settle(pilot)
        dead_id = int(rows(app)[0][0])
        await pilot.press("R", "y")
        await settle(pilot)
    app.source.close()
    with Queue(url, clock=FakeClock(clock.now())) as q:
        assert q.get(dead_id).status == "pending"


def test_jobq_tui_refuses_an_unreachable_url_in_one_line(capsys):
    assert tui_main(["postgresql://postgres@127.0.0.1:1/nothing"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot connect" in err[0]


@pytest.mark.slow  # seconds of real time (a pilot session, processes or clocks)
async def test_the_header_never_shows_the_password_of_the_url(pg_fixture):
    url, clock = pg_fixture
    secret = "s3cr3t-pw"
    app = make_app(url.replace("postgres@", f"postgres:{secret}@", 1), FakeClock(clock.now()))
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        text = str(app.query_one("#header").render())
        assert "postgres:***@127.0.0.1" in text and secret not in text, text
    app.source.close()
