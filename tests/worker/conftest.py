"""What the worker tests share: a database of each store with a queue on it
(``stores/fixtures.py``: ``db``, ``queue``, ``producer``; each test that takes one runs
once per store), and a worker run on a thread of the test."""
from __future__ import annotations

import threading

from jobq_core import Worker

from stores.fixtures import db, producer, queue  # noqa: F401 - fixtures, by name


def start(worker: Worker, **kwargs) -> threading.Thread:
    """``worker.run(**kwargs)`` on a daemon thread, without signal handlers."""
    t = threading.Thread(target=lambda: worker.run(handle_signals=False, **kwargs), daemon=True)
    t.start()
    return t
