"""The application's connection on PostgreSQL: a NOTIFY sent in its transaction wakes a
listening worker at its commit (and never on rollback); the identity check follows the
connection's search_path, and survives a server restart; a failed transaction is refused
without touching it further."""
from __future__ import annotations

import threading
import time

import psycopg
import pytest

from jobq_core import Queue, UnusableConnection


@pytest.fixture
def queue(pg_url):
    with Queue(pg_url) as q:
        yield q


def test_a_transactional_enqueue_wakes_a_listener_at_commit_and_never_on_rollback(pg_url, queue):
    with Queue(pg_url, poll_interval=30.0) as listener, psycopg.connect(pg_url) as app:
        watch = listener.watch()
        try:
            assert not watch.wait(0)
            queue.enqueue("k", conn=app)
            time.sleep(0.2)  # past the per-queue notification limit: nothing held back
            app.rollback()
            assert not watch.wait(1.0)  # nothing committed: no notification, no change
            queue.enqueue("k", conn=app)
            threading.Timer(0.2, app.commit).start()
            started = time.monotonic()
            assert watch.wait(10)
            took = time.monotonic() - started
        finally:
            watch.close()
    assert took < 1.0  # the poll is 30 s away: only the notification can explain this


def test_the_identity_follows_the_connections_search_path(pg_url, queue):
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("CREATE SCHEMA other")
    with Queue(pg_url + "?options=-csearch_path%3Dother") as elsewhere:  # its own jobq tables
        elsewhere.enqueue("there")
    with psycopg.connect(pg_url) as app:
        app.execute("SET search_path TO other")
        with pytest.raises(UnusableConnection, match="not to this queue's database"):
            queue.enqueue("k", conn=app)
        app.rollback()
    with psycopg.connect(pg_url) as app:
        app.execute("SET search_path TO nowhere")
        with pytest.raises(UnusableConnection, match="no jobq_jobs table"):
            queue.enqueue("k", conn=app)
    assert queue.list() == []


def test_a_session_with_its_own_time_zone_and_date_style_is_the_same_database(pg_url, queue):
    with psycopg.connect(pg_url) as app:
        app.execute("SET TimeZone TO 'Asia/Kathmandu'; SET DateStyle TO 'German, DMY'")
        queue.enqueue("k", conn=app)
        app.commit()
    assert len(queue.list()) == 1


def test_a_failed_transaction_is_refused_and_left_for_the_caller_to_roll_back(queue, pg_url):
    with psycopg.connect(pg_url) as app:
        with pytest.raises(psycopg.errors.UndefinedTable):
            app.execute("SELECT * FROM no_such_table")
        with pytest.raises(UnusableConnection, match="roll it back first"):
            queue.enqueue("k", conn=app)
        app.rollback()
        queue.enqueue("k", conn=app)
        app.commit()
    assert len(queue.list()) == 1


def test_the_identity_check_survives_a_server_restart(pg_server, pg_url, queue):
    if not pg_server.restartable:
        pytest.skip("the tests' server is not a throwaway cluster of our own")
    pg_server.restart()
    with psycopg.connect(pg_url) as app:  # the server's start time changed
        queue.enqueue("k", conn=app)
        app.commit()
    assert len(queue.list()) == 1
