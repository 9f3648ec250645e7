"""Rows another program wrote that jobq cannot make sense of: every view, the detail
screen and the CLI show them (the raw value, marked) instead of failing the whole list."""
import sqlite3
import subprocess
import sys

import pytest

import fixture_db
from conftest import make_app, settle
from jobq_core import Queue
from jobq_tui.screens import DetailScreen, detail_text

pytestmark = pytest.mark.slow  # every view, every detail and the CLI, on each foreign row

FOREIGN = [
    "UPDATE jobq_jobs SET run_at=1e12 WHERE id=(SELECT min(id) FROM jobq_jobs WHERE status='pending')",
    "UPDATE jobq_jobs SET created_at='yesterday' WHERE id=(SELECT max(id) FROM jobq_jobs WHERE status='dead')",
    "UPDATE jobq_jobs SET status='weird', finished_at=1e15 WHERE id=(SELECT max(id) FROM jobq_jobs WHERE status='succeeded')",
    "UPDATE jobq_jobs SET lease_until='later', heartbeat_at=-1e300 WHERE id=(SELECT min(id) FROM jobq_jobs WHERE status='running')",
    "UPDATE jobq_jobs SET attempts='two', max_attempts=x'00ff' WHERE id=(SELECT min(id) FROM jobq_jobs WHERE status='dead')",
    "UPDATE jobq_attempts SET outcome='exploded', started_at='noon' WHERE seq=(SELECT max(seq) FROM jobq_attempts)",
    "UPDATE jobq_workers SET queues='not json', started_at='x', busy='many' WHERE id=(SELECT min(id) FROM jobq_workers)",
]


@pytest.fixture
def bad_db(tmp_path):
    path = tmp_path / "bad.db"
    clock = fixture_db.build(path)
    con = sqlite3.connect(path)
    con.execute("PRAGMA ignore_check_constraints=1")  # as a careless program might
    with con:
        for statement in FOREIGN:
            assert con.execute(statement).rowcount == 1, statement
    con.close()
    return path, clock


async def test_every_view_and_every_detail_survive_foreign_rows(bad_db):
    path, clock = bad_db
    app = make_app(path, clock)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        for key in ("1", "2", "3", "4", "5", "d", "6"):
            await pilot.press(key)
            await settle(pilot)
            t = app.table()
            assert t.row_count > 0, key
            for row in range(min(t.row_count, 12)):  # open every job's detail
                if key in ("4", "6"):
                    break
                t.move_cursor(row=row)
                await pilot.press("enter")
                await settle(pilot)
                if isinstance(app.screen, DetailScreen):
                    app.screen.query_one("#detail-body").render()
                    await pilot.press("escape")
                    await settle(pilot)
        assert app.is_running
        assert "unavailable" not in str(app.query_one("#header").render())



def test_the_detail_shows_the_raw_values_marked_invalid(bad_db):
    path, clock = bad_db
    with Queue(path, clock=clock) as q:
        job = next(j for j in q.list("dead", limit=50) if j.attempts == "two")
        body = detail_text(job, q.attempts(job.id), clock.now(), job.id).plain
    assert "⚠ invalid values (shown as - below):" in body
    assert "attempts = 'two' (not an integer)" in body
    assert "max_attempts = b'\\x00\\xff' (not an integer)" in body


@pytest.mark.parametrize("command", [["list"], ["list", "--status", "dead"], ["workers"],
                                     ["stats"], *[["show", str(i)] for i in range(1, 30)]])
def test_the_cli_reads_foreign_rows_without_a_traceback(bad_db, command):
    path, _ = bad_db
    r = subprocess.run([sys.executable, "-m", "jobq_cli.main", *command, "--db", str(path)],
                       capture_output=True, text=True, timeout=60)
    assert "Traceback" not in r.stderr
    assert r.returncode == (1 if "no job" in r.stderr else 0), r.stderr
