"""jobq keeps its SQLite file healthy: a WAL that grew while a reader held an old snapshot
is reported (``jobq stats``, the ``jobq_db_wal_bytes`` gauge, the warnings), cannot be
checkpointed while that reader stays, and is checkpointed and truncated to nothing by the
maintenance leader's next look once it leaves."""
from __future__ import annotations

import json
import logging
import sqlite3

from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from jobq_cli.main import app
from jobq_core import Queue
from jobq_core.common import db_health
from jobq_core.maintenance import TableCare

BOUND = 1 << 20  # the rule of the 64 MiB bound, on a WAL of a few MiB


def grow_wal(q: Queue, megabytes: int) -> None:
    for _ in range(megabytes):
        q.enqueue_many([("k", {"pad": "x" * 1000})] * 1000)


def test_a_wal_grown_under_a_held_reader_is_reported_and_checkpointed_once_it_leaves(
        tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(db_health, "WAL_BYTES", BOUND)
    db = str(tmp_path / "jobs.db")
    q = Queue(db)
    q.enqueue("k")
    reader = sqlite3.connect(db, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM jobq_jobs").fetchone()  # its snapshot, held
    grow_wal(q, 3)
    health = q.db_health()
    assert health.wal_bytes is not None and health.wal_bytes > 2 * BOUND
    assert health.wal_starved() and health.warnings()[0].startswith("WAL ")

    runner = CliRunner()
    database = json.loads(runner.invoke(app, ["stats", "--db", db, "--json"]).output)["database"]
    assert database["wal_starved"] is True and database["wal_bytes"] > 2 * BOUND
    assert "a long reader holds back checkpoints" in database["warnings"][0]
    metrics = runner.invoke(app, ["metrics", "--db", db]).output
    wal = [s.value for f in text_string_to_metric_families(metrics) for s in f.samples
           if s.name == "jobq_db_wal_bytes"]
    assert wal and wal[0] > 2 * BOUND

    care = TableCare(q)
    caplog.set_level(logging.WARNING, logger="jobq")
    logging.getLogger("jobq").propagate = True
    assert care.run_once() == [] and care.run_once() == []
    said = [r.getMessage() for r in caplog.records if "cannot be checkpointed" in r.getMessage()]
    assert len(said) == 1  # said once while it lasts
    assert q.db_health().wal_starved()  # still: the reader holds it

    reader.execute("COMMIT")
    reader.close()
    assert care.run_once() == ["wal"]
    assert q.db_health().wal_bytes == 0 and q.db_health().warnings() == []
    assert q.stats().pending == 3001  # nothing lost on the way
    q.close()
