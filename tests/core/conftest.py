"""What the worker tests share: a database file, a producer's queue on it, and a worker run
on a thread of the test."""
from __future__ import annotations

import threading

import pytest

from jobq_core import Queue, Worker


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "jobs.db")


@pytest.fixture
def producer(db):
    with Queue(db) as q:
        yield q


def start(worker: Worker, **kwargs) -> threading.Thread:
    """``worker.run(**kwargs)`` on a daemon thread, without signal handlers."""
    t = threading.Thread(target=lambda: worker.run(handle_signals=False, **kwargs), daemon=True)
    t.start()
    return t
