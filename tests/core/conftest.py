"""What the worker tests share: a database of each store (``tests/stores``; the ``adapter``
and ``database`` fixtures of ``tests/conftest.py``), a producer's queue on it, and a worker
run on a thread of the test. Every test that takes ``db``, ``queue`` or ``producer`` runs
once per store; one that only SQLite can run says why with
``@pytest.mark.stores("sqlite", why=...)``."""
from __future__ import annotations

import threading

import pytest

from jobq_core import Queue, Worker


@pytest.fixture
def db(database) -> str:
    return database


@pytest.fixture
def queue(db, clock):
    with Queue(db, clock=clock) as q:
        yield q


@pytest.fixture
def producer(db):
    with Queue(db) as q:
        yield q


def start(worker: Worker, **kwargs) -> threading.Thread:
    """``worker.run(**kwargs)`` on a daemon thread, without signal handlers."""
    t = threading.Thread(target=lambda: worker.run(handle_signals=False, **kwargs), daemon=True)
    t.start()
    return t
