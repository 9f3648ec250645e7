"""A graceful stop hands back every job it claimed: none stays ``running`` once
``Worker.run()`` returns, and none is started after the stop was asked for, however long a
statement takes. With slow statements the completer's claim (written with the batch's
completions, in its own thread) could be in flight when the stop landed: its jobs were
started after the executor had drained, and left running, their handlers run."""
from __future__ import annotations

import threading
import time

import psycopg
import pytest

from jobq_core import Queue, Registry, Worker
from jobq_core.testing import wait_for

from .conftest import start

SLOW_UPDATES = """
CREATE FUNCTION jobq_test_slow() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN PERFORM pg_sleep(0.02); RETURN NULL; END $$;
CREATE TRIGGER jobq_test_slow AFTER UPDATE ON jobq_jobs
FOR EACH STATEMENT EXECUTE FUNCTION jobq_test_slow();
"""


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(3))
def test_a_stop_during_slow_statements_leaves_no_job_running(pg_url, round_):
    producer = Queue(pg_url)
    producer.enqueue_many([("noop", i) for i in range(600)])
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(SLOW_UPDATES)
    ran: set[int] = set()
    lock = threading.Lock()
    registry = Registry()

    @registry.task("noop")
    def noop(payload, ctx):
        with lock:
            ran.add(ctx.job_id)

    worker = Worker(Queue(pg_url), registry, concurrency=16)
    thread = start(worker)
    wait_for(lambda: len(ran) >= 100, timeout=60)
    time.sleep(0.01 * round_)  # stop at a different point of the completer's cycle
    worker.stop()
    thread.join(timeout=60)
    assert not thread.is_alive()
    running = producer.list("running", limit=1000)
    assert running == [], f"{len(running)} jobs left running after the stop"
    pending = {j.id for j in producer.list("pending", limit=1000)}
    with lock:
        assert not pending & ran, "a job handed back after its handler ran"
    producer.close()
