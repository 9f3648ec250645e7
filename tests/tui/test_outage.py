"""While the database cannot be read, the monitor says so within two refreshes: it never
passes off its last read as live (the store's change signal cannot tell "nothing changed"
from "cannot look"), and it reads again once the database is back."""
import time

import pytest

from jobq_core import Queue
from jobq_core.presentation.views.filters import Filter
from jobq_tui.source import Source, Unavailable
from jobq_tui.views import VIEWS

REFRESH = 1.0  # jobq-tui's default --interval: the app polls the source once a refresh

pytestmark = pytest.mark.slow  # a server stopped and started again: seconds


def _seconds_until_unavailable(s: Source, limit: float) -> float | None:
    start = time.monotonic()
    while (took := time.monotonic() - start) < limit:
        try:
            s.poll(VIEWS["running"], Filter())
        except Unavailable:
            return took
        time.sleep(0.1)  # finer than a refresh: measures when the app would first see it
    return None


def _watched(database) -> Source:
    """A monitor's source on ``database``, holding one pending job, read once."""
    with Queue(database) as q:
        q.enqueue("report.build")
    s = Source(database, read_only=True)
    s.open()
    assert s.poll(VIEWS["running"], Filter()).stats.pending == 1
    return s


def _polls_again(s: Source, limit: float = 15.0):
    deadline = time.monotonic() + limit
    while True:
        try:
            return s.poll(VIEWS["running"], Filter())
        except Unavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_a_stopped_postgresql_server_shows_within_two_refreshes_and_the_monitor_recovers(
        pg_server, pg_url):
    if not pg_server.restartable:
        pytest.skip(f"the server ({pg_server.origin}) cannot be stopped by a test")
    s = _watched(pg_url)
    try:
        with pg_server.halted():
            took = _seconds_until_unavailable(s, 2 * REFRESH + 1.0)
            assert took is not None and took <= 2 * REFRESH, (
                f"the outage showed after {took} s" if took else "the outage never showed")
        assert _polls_again(s).stats.pending == 1
    finally:
        s.close()


def test_a_sqlite_file_that_went_away_shows_within_two_refreshes(tmp_path):
    db = tmp_path / "jobs.db"
    s = _watched(db)
    try:
        moved = tmp_path / "moved"
        moved.mkdir()
        for name in ("jobs.db", "jobs.db-wal", "jobs.db-shm"):
            if (tmp_path / name).exists():
                (tmp_path / name).rename(moved / name)
        took = _seconds_until_unavailable(s, 2 * REFRESH + 1.0)
        assert took is not None and took <= 2 * REFRESH
        for name in ("jobs.db", "jobs.db-wal", "jobs.db-shm"):
            if (moved / name).exists():
                (moved / name).rename(tmp_path / name)
        assert _polls_again(s).stats.pending == 1
    finally:
        s.close()
