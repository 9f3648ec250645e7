"""The schema on PostgreSQL: created with its version beside an application's own tables,
migrated once by processes starting together, and refused when it is not jobq's or is
too new, before anything is written."""
from __future__ import annotations

import multiprocessing

import psycopg
import pytest

from jobq_core import DatabaseError, ForeignTable, Queue, SchemaTooNew
from jobq_core.store.postgres.schema import SCHEMA_VERSION, TABLES


def _tables(url):
    with psycopg.connect(url) as c:
        return {r[0] for r in c.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}


def test_opening_creates_the_tables_and_records_the_version(pg_url):
    with Queue(pg_url) as q:
        q.check()  # a queue connects, and makes its tables, on first use
    assert set(TABLES) <= _tables(pg_url)
    with psycopg.connect(pg_url) as c:
        meta = dict(c.execute("SELECT key, value FROM jobq_meta").fetchall())
    assert meta == {"application": "jobq", "schema_version": str(SCHEMA_VERSION)}


def test_the_tables_sit_beside_an_applications_own(pg_url):
    with psycopg.connect(pg_url) as c:
        c.execute("CREATE TABLE orders(id int PRIMARY KEY)")
    with Queue(pg_url) as q:
        q.enqueue("k")
    assert {"orders", "jobq_jobs"} <= _tables(pg_url)


def test_a_foreign_table_with_jobqs_name_is_refused_untouched(pg_url):
    with psycopg.connect(pg_url) as c:
        c.execute("CREATE TABLE jobq_jobs(id int, mine text)")
    with pytest.raises(ForeignTable, match="did not create"):
        Queue(pg_url).check()
    assert _tables(pg_url) == {"jobq_jobs"}


def test_a_foreign_meta_table_is_refused(pg_url):
    with psycopg.connect(pg_url) as c:
        c.execute("CREATE TABLE jobq_meta(key text, value text)")
        c.execute("INSERT INTO jobq_meta VALUES ('application', 'other')")
    with pytest.raises(ForeignTable):
        Queue(pg_url).check()


def test_a_newer_schema_is_refused(pg_url):
    with Queue(pg_url) as q:
        q.check()
    with psycopg.connect(pg_url) as c:
        c.execute("UPDATE jobq_meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(SchemaTooNew, match="newer than this jobq"):
        Queue(pg_url).check()


@pytest.mark.parametrize("options", [{"read_only": True}, {"create": False}])
def test_only_a_store_that_may_create_puts_jobqs_tables_in_a_database(pg_url, options):
    with pytest.raises(DatabaseError, match="not a jobq database"):
        Queue(pg_url, **options).check()
    assert _tables(pg_url) == set()


def _open(url, barrier):
    barrier.wait()
    with Queue(url) as q:
        q.check()


@pytest.mark.slow
def test_processes_starting_together_migrate_once(pg_url):
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(4)
    procs = [ctx.Process(target=_open, args=(pg_url, barrier)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    with Queue(pg_url) as q:
        assert q.enqueue("k") == 1


def test_a_version_1_schema_is_migrated_and_its_workers_kept_with_no_recorded_beat(pg_url):
    from jobq_core.store.postgres.schema import MIGRATIONS

    with psycopg.connect(pg_url) as c:
        c.execute(MIGRATIONS[0])
        c.execute("INSERT INTO jobq_meta VALUES ('application', 'jobq'), ('schema_version', '1')")
        c.execute("INSERT INTO jobq_workers VALUES ('old', 'h', 1, NULL, 2, 0, 0, 0)")
    with Queue(pg_url) as q:
        [w] = q.workers(forgotten=True)
        assert (w.id, w.beat_interval, w.lease) == ("old", None, None)
        q.register_worker("new", host="h", pid=2, queues=None, concurrency=1,
                          beat_interval=2.0, lease=6.0)
        assert {w.id: w.beat_interval for w in q.workers(forgotten=True)} == {
            "old": None, "new": 2.0}
    with psycopg.connect(pg_url) as c:
        assert c.execute("SELECT value FROM jobq_meta WHERE key='schema_version'"
                         ).fetchone()[0] == str(SCHEMA_VERSION) == "9"
