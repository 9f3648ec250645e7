"""A completion the database refuses (here a trigger refuses one result) costs only its
own outcome: the other completions of the same batch are written, on every store, with a
real Worker. Without that, every outcome of the batch was lost and its jobs went dead
with "lease expired"."""
from __future__ import annotations

import threading
import time

import pytest

from stores import AppDB

from jobq_core import Queue, Registry, Worker

GOOD = 5


@pytest.mark.slow  # seconds of real time (a pilot session, processes or clocks)
def test_one_refused_completion_leaves_the_others_of_its_batch_written(database, adapter):
    with Queue(database) as q, AppDB(database) as app:
        for statement in adapter.refuse_updates("""NEW.result = '"refuse"'"""):
            app.execute(statement)
        app.commit()
        first = q.enqueue("first")
        refused = q.enqueue("echo", "refuse")
        good = q.enqueue_many([("echo", i) for i in range(GOOD)])

        held = threading.Event()
        r = Registry()

        @r.task("first")
        def hold_the_first_write(payload):
            """Lock the row the completer writes first (SQLite: the whole file) for half a
            second, so that every other outcome joins the next batch."""
            app.execute("UPDATE jobq_jobs SET priority = priority WHERE id = ?", (first,))
            threading.Timer(0.5, app.commit).start()
            held.set()

        @r.task("echo")
        def echo(payload):
            held.wait(10)
            time.sleep(0.05)  # after the first outcome was taken for its write
            return payload

        w = Worker(q, r, concurrency=GOOD + 2, lease=2)
        w.run(burst=True, handle_signals=False)
        assert [q.get(i).status for i in [first, *good]] == ["succeeded"] * (GOOD + 1)
        assert [q.get(i).result for i in good] == list(range(GOOD))
        assert q.get(refused).status != "succeeded"
