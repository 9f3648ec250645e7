"""The application's connection on SQLite: the price (its open transaction holds the
write lock, so a worker's claim waits for its commit, and a stopped holder is named), a
connection in autocommit mode with a transaction opened explicitly, and a connection that
reaches the file by another path."""
from __future__ import annotations

import os
import sqlite3
import threading
import time

import pytest

from jobq_core import DatabaseUnavailable, Queue, UnusableConnection


def test_a_claim_waits_for_the_applications_commit(db_path):
    with Queue(db_path) as q, Queue(db_path, busy_timeout=0.2) as impatient:
        q.enqueue("ready")
        app = sqlite3.connect(db_path, check_same_thread=False)  # committed from a timer
        app.execute("CREATE TABLE invoices(id INTEGER PRIMARY KEY, paid INTEGER)")
        app.commit()
        app.execute("INSERT INTO invoices VALUES (1, 1)")
        q.enqueue("receipt", conn=app)
        with pytest.raises(DatabaseUnavailable, match="locked past the busy timeout"):
            impatient.claim("w")
        threading.Timer(0.3, app.commit).start()
        started = time.monotonic()
        assert q.claim("w") is not None  # waits (busy timeout 30 s) for the commit
        assert time.monotonic() - started >= 0.2
        app.close()


def test_an_explicit_begin_on_an_autocommit_connection_is_joined(db_path):
    with Queue(db_path) as q:
        app = sqlite3.connect(db_path, isolation_level=None)
        app.execute("BEGIN IMMEDIATE")
        q.enqueue_many([("a", 1), ("b", 2)], conn=app)
        app.execute("ROLLBACK")
        assert q.list() == []
        app.execute("BEGIN")
        q.enqueue("c", conn=app)
        app.execute("COMMIT")
        assert [j.kind for j in q.list()] == ["c"]
        app.close()


def test_the_same_file_by_another_path_is_the_same_database(db_path, tmp_path):
    with Queue(db_path) as q:
        os.symlink(db_path, tmp_path / "link.db")
        app = sqlite3.connect(tmp_path / "link.db")
        q.enqueue("k", conn=app)
        app.commit()
        app.close()
        memory = sqlite3.connect(":memory:")
        with pytest.raises(UnusableConnection, match="in-memory"):
            q.enqueue("k", conn=memory)
        assert len(q.list()) == 1
