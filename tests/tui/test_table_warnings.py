"""The monitor's header warns of jobq's tables as ``jobq stats`` does (``DbHealth.warnings``,
read every ``HEALTH_EVERY`` seconds): here a SQLite WAL a held reader let grow, gone once
the reader left and the WAL was checkpointed."""
import sqlite3

from conftest import make_app, settle
from jobq_core import Queue
from jobq_core.common import db_health
from jobq_core.testing import FakeClock
from jobq_tui.source import HEALTH_EVERY

T0 = 1_767_225_600.0


def header(app):
    return str(app.query_one("#header").render())


async def test_a_starved_wal_is_a_header_warning_until_it_is_checkpointed(tmp_path, monkeypatch):
    monkeypatch.setattr(db_health, "WAL_BYTES", 1 << 20)
    clock = FakeClock(T0)
    path = str(tmp_path / "jobs.db")
    q = Queue(path, clock=clock)
    q.enqueue("k")
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM jobq_jobs").fetchone()
    for _ in range(2):
        q.enqueue_many([("k", {"pad": "x" * 1000})] * 1000)
    app = make_app(path, clock)
    async with app.run_test(size=(120, 24)) as pilot:
        await settle(pilot)
        assert "a long reader holds back checkpoints" in header(app)
        reader.execute("COMMIT")
        reader.close()
        assert q.db_tidy()
        clock.advance(HEALTH_EVERY + 1)
        app.request_poll(force=True)
        await settle(pilot)
        assert "WAL" not in header(app)
    q.close()
