"""The store contract suite: every store runs these same tests, the way every River driver
runs ``riverdrivertest`` and every huey storage runs ``StorageTests``.

Each test runs once per store of ``tests/stores`` (``ADAPTERS``): ``adapter`` is the store's
test adapter, and ``database`` the database string of a fresh database of it for that one
test (``Queue`` picks the store from the string, as it does for users), checked for
integrity afterwards; both come from ``tests/conftest.py``. The test id is the store's
name (``test_...[sqlite]``), which is also what the store reports as ``describe()["store"]``.

Fixtures: ``queue`` is a ``Queue`` on that database with the test's ``FakeClock``;
``store`` is its store; ``open_queue()`` opens another ``Queue`` (its own store and
connection) on the same database, as another process would.
"""
from __future__ import annotations

import pytest

from jobq_core import Queue


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
