"""The store contract suite: every store runs these same tests, the way every River driver
runs ``riverdrivertest`` and every huey storage runs ``StorageTests``.

A store joins the suite with one function appended to ``STORES``. Given the test's
``tmp_path``, it yields the database string of a fresh database for that one test (empty,
or with jobq's tables made; ``Queue`` picks the store from the string, as it does for
users), and cleans up after the yield. Its name is the test id (``test_...[sqlite]``)
and the name the store reports as ``describe()["store"]``.

Fixtures: ``queue`` is a ``Queue`` on that database with the test's ``FakeClock``;
``store`` is its store; ``open_queue()`` opens another ``Queue`` (its own store and
connection) on the same database, as another process would.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from jobq_core import Queue


def sqlite(tmp_path: Path) -> Iterator[str]:
    """A new file per test. Afterwards the file must still pass SQLite's integrity check."""
    path = tmp_path / "jobs.db"
    yield str(path)
    if path.exists():
        from jobq_core.store.sqlite import SqliteStore

        store = SqliteStore(path)
        try:
            assert store.integrity_check() == "ok"
        finally:
            store.close()


def postgresql(tmp_path: Path) -> Iterator[str]:
    """A new database per test on the tests' server (see ``tests/pgserver.py``), with jobq's
    tables already made (a copy of one migrated once); it must still pass the store's
    integrity check afterwards, and is dropped."""
    import os

    import pgserver

    try:
        server = pgserver.server()
    except pgserver.Unavailable as e:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must run the PostgreSQL tests: {e}")
        pytest.skip(str(e))
    name, url = server.create_database(migrated=True)
    try:
        yield url
        q = Queue(url, create=False)
        try:
            assert q.store.integrity_check() == "ok"
        finally:
            q.close()
    finally:
        server.drop_database(name)


STORES = [sqlite, postgresql]


@pytest.fixture(params=STORES, ids=lambda factory: factory.__name__)
def factory(request) -> Callable[[Path], Iterator[str]]:
    return request.param


@pytest.fixture
def database(factory, tmp_path) -> Iterator[str]:
    yield from factory(tmp_path)


@pytest.fixture
def open_queue(database, clock):
    """``open_queue(**options)``: another Queue on this test's database, with the test's
    clock; each one is closed after the test."""
    opened: list[Queue] = []

    def open_(**options) -> Queue:
        q = Queue(database, clock=clock, **options)
        opened.append(q)
        return q

    yield open_
    for q in opened:
        q.close()


@pytest.fixture
def queue(open_queue) -> Queue:
    return open_queue()


@pytest.fixture
def store(queue):
    return queue.store
