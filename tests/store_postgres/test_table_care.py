"""jobq keeps its own tables healthy on PostgreSQL: the maintenance leader vacuums a table
whose dead rows passed the bounds when autovacuum did not, or no vacuum has visited yet,
leaves it to autovacuum when that is on and working, does not vacuum again while an old
transaction holds it back, and says once when its role may not vacuum; ``jobq stats
--json`` and the metrics report dead rows and held-back vacuum. Each test runs on a
cluster of its own, started with autovacuum off or on (the tests' shared server has it at
its default)."""
from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

import pgserver
from jobq_cli.main import app
from jobq_core import Queue, Registry, Worker
from jobq_core.common import db_health
from jobq_core.maintenance import TableCare
from jobq_core.testing import wait_for
from stores.adapter import skip_or_fail

DEAD = 12_000  # past DEAD_ROWS, and past 20 % of the table's live rows


def _cluster(**settings: str) -> pgserver.Server:
    try:
        return pgserver.cluster(**settings)
    except pgserver.Unavailable as e:
        skip_or_fail(str(e))
        raise


def _database(**settings: str) -> Iterator[str]:
    """A migrated database on the cluster of these settings, dropped after the test."""
    server = _cluster(**settings)
    name, url = server.create_database(migrated=True)
    yield url
    server.drop_database(name)


@pytest.fixture
def off_url():
    yield from _database(autovacuum="off")


@pytest.fixture
def on_url():
    yield from _database(autovacuum="on", autovacuum_naptime="1")


@pytest.fixture
def unvisited_url():  # autovacuum on, but napping an hour: no visit within a test
    yield from _database(autovacuum="on", autovacuum_naptime="3600")


def make_dead_rows(url: str, n: int = DEAD) -> None:
    """``n`` jobs due in an hour, then each updated once: ``n`` dead row versions. The
    session ends, so its statistics reach the server's views."""
    with Queue(url) as q:
        if not q.db_health().tables["jobq_jobs"].live_rows:
            q.enqueue_many([{"kind": "k", "payload": {}, "delay": 3600}] * n)
    with psycopg.connect(url, autocommit=True) as c:
        c.execute("UPDATE jobq_jobs SET priority = priority")


def jobs_table(q: Queue) -> db_health.TableHealth:
    return q.db_health().tables["jobq_jobs"]


@pytest.mark.slow  # a PostgreSQL cluster of its own (initdb, start)
def test_with_autovacuum_off_the_leader_vacuums_a_table_past_the_bound(off_url):
    q = Queue(off_url)
    assert not jobs_table(q).autovacuum and q.db_health().autovacuum is False
    make_dead_rows(off_url)
    wait_for(lambda: jobs_table(q).dead_rows >= DEAD, 10)
    assert "jobq_jobs" in q.db_health().bloated()
    assert "dead rows in jobq_jobs" in " ".join(q.db_health().warnings())
    assert TableCare(q).run_once() == ["jobq_jobs"]
    wait_for(lambda: jobs_table(q).dead_rows < db_health.DEAD_ROWS, 10)
    assert jobs_table(q).last_vacuum is not None
    assert TableCare(q).run_once() == []  # nothing past the bound any more
    q.close()


@pytest.mark.slow
def test_a_running_worker_vacuums_its_tables_when_autovacuum_is_off(off_url):
    q = Queue(off_url)
    worker = Worker(q, Registry(), concurrency=1)
    thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False})
    thread.start()
    try:
        wait_for(lambda: worker.leading, 10)
        make_dead_rows(off_url)
        # the leader's first look came at its election; the next within 15 s
        wait_for(lambda: (t := jobs_table(q)).last_vacuum is not None
                 and t.dead_rows < db_health.DEAD_ROWS, 40)
    finally:
        worker.stop()
        thread.join(30)
    q.close()


@pytest.mark.slow
def test_with_autovacuum_on_the_leader_leaves_the_tables_to_it(on_url):
    q = Queue(on_url)
    assert jobs_table(q).autovacuum
    care = TableCare(q)
    make_dead_rows(on_url)
    # autovacuum visits within its nap (1 s here)
    wait_for(lambda: jobs_table(q).last_autovacuum is not None
             and jobs_table(q).dead_rows < db_health.DEAD_ROWS, 30)
    make_dead_rows(on_url)
    assert care.run_once() == []  # autovacuum has come before, and within the minute
    assert jobs_table(q).last_vacuum is None
    q.close()


@pytest.mark.slow  # a PostgreSQL cluster of its own (initdb, start)
def test_a_table_no_vacuum_has_visited_is_vacuumed_at_once_with_autovacuum_on(unvisited_url):
    """A new table filling fast gets its first vacuum and statistics from the leader,
    not a minute later from autovacuum (its nap here: an hour)."""
    with Queue(unvisited_url) as q:
        make_dead_rows(unvisited_url)
        table = jobs_table(q)
        assert table.autovacuum and table.last_autovacuum is None and table.last_vacuum is None
        assert TableCare(q).run_once() == ["jobq_jobs"]
        table = jobs_table(q)
        assert table.last_vacuum is not None and table.dead_rows < db_health.DEAD_ROWS


@pytest.mark.slow  # a PostgreSQL cluster of its own (initdb, start)
def test_a_transaction_held_open_is_reported_and_not_vacuumed_against(off_url, monkeypatch):
    # the bounds' rules, not their figures: the dead rows a VACUUM could not remove are
    # estimated again by its ANALYZE (7,000 of 12,000 in one run), and 5 minutes is long
    monkeypatch.setattr(db_health, "HELD_BACK", 0.5)
    monkeypatch.setattr(db_health, "DEAD_ROWS", 1000)
    q = Queue(off_url)
    runner = CliRunner()
    with psycopg.connect(off_url, autocommit=True) as held:
        held.execute("BEGIN")
        held.execute("SELECT txid_current()")  # holds a transaction id: vacuum stops at it
        make_dead_rows(off_url)
        wait_for(lambda: (q.db_health().oldest_transaction or 0) >= 0.5
                 and jobs_table(q).dead_rows >= DEAD, 10)
        out = runner.invoke(app, ["stats", "--db", off_url, "--json"])
        assert out.exit_code == 0, out.output
        database = json.loads(out.output)["database"]
        assert database["vacuum_held_back"] is True
        assert database["oldest_transaction_seconds"] >= 0.5
        assert database["tables"]["jobq_jobs"]["vacuum_due"] is True
        assert any(w.startswith("vacuum held back") for w in database["warnings"])
        text = runner.invoke(app, ["stats", "--db", off_url]).output
        assert "! vacuum held back: a transaction open" in text
        assert gauges(off_url)["jobq_db_oldest_transaction_seconds"][()] >= 0.5
        assert gauges(off_url)["jobq_db_dead_rows"][(("table", "jobq_jobs"),)] >= DEAD

        care = TableCare(q)
        assert care.run_once() == ["jobq_jobs"]  # the rows died after it began: all kept
        wait_for(lambda: jobs_table(q).last_vacuum is not None, 10)
        assert jobs_table(q).vacuum_due()
        assert care.run_once() == []  # another VACUUM would remove nothing
        held.execute("COMMIT")
    wait_for(lambda: q.db_health().oldest_transaction is None, 10)
    assert gauges(off_url)["jobq_db_oldest_transaction_seconds"][()] == 0
    assert care.run_once() == ["jobq_jobs"]
    wait_for(lambda: jobs_table(q).dead_rows < 1000, 10)
    q.close()


@pytest.mark.slow  # a PostgreSQL cluster of its own (initdb, start)
def test_a_role_that_may_not_vacuum_is_said_once_and_the_care_goes_on(off_url, caplog):
    with psycopg.connect(off_url, autocommit=True) as c:
        try:
            c.execute("CREATE ROLE jobq_plain LOGIN")
        except psycopg.errors.DuplicateObject:
            pass
        c.execute("GRANT ALL ON ALL TABLES IN SCHEMA public TO jobq_plain")
        c.execute("GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO jobq_plain")
    parts = urlsplit(off_url)
    plain = urlunsplit(parts._replace(netloc="jobq_plain@" + parts.netloc.rpartition("@")[2]))
    make_dead_rows(off_url)
    q = Queue(plain)
    wait_for(lambda: jobs_table(q).dead_rows >= DEAD, 10)
    assert not jobs_table(q).can_vacuum
    care = TableCare(q)
    caplog.set_level(logging.WARNING, logger="jobq")
    logging.getLogger("jobq").propagate = True
    assert care.run_once() == [] and care.run_once() == []
    said = [r.getMessage() for r in caplog.records if "may not VACUUM" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("jobq_jobs has ")
    assert jobs_table(q).last_vacuum is None
    q.close()


def gauges(url: str) -> dict[str, dict[tuple, float]]:
    out = CliRunner().invoke(app, ["metrics", "--db", url])
    assert out.exit_code == 0, out.output
    found: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(out.output):
        for s in family.samples:
            found.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return found
