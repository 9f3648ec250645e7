"""Fixtures of a queue on every store, for the test directories whose tests run once per
store (``tests/worker``, ``tests/api``): their conftest imports them. ``db`` is a fresh
database of the test's store (the ``database`` fixture of ``tests/conftest.py``),
``queue`` a Queue on it with the test's ``FakeClock``, ``producer`` one on the real clock.
A test that only SQLite can run says why with ``@pytest.mark.stores("sqlite", why=...)``."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from jobq_core import Queue
from jobq_core.testing import FakeClock


@pytest.fixture
def db(database: str) -> str:
    return database


@pytest.fixture
def queue(db: str, clock: FakeClock) -> Iterator[Queue]:
    with Queue(db, clock=clock) as q:
        yield q


@pytest.fixture
def producer(db: str) -> Iterator[Queue]:
    with Queue(db) as q:
        yield q
