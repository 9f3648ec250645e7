"""A row another program wrote, that jobq cannot read, never stops a worker, the reaper or
the claim of other jobs: it is set aside as dead with an error naming the column."""
from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from .conftest import wait_for


def tamper(db, sql, *params):
    con = sqlite3.connect(db)
    with con:
        con.execute(sql, params)
    con.close()


def bad_running_row(queue, db):
    """A running job with an expired lease and max_attempts='three'."""
    job_id = queue.enqueue("nap")
    tamper(db, "UPDATE jobq_jobs SET status='running', token=99, worker='gone', "
               "lease_until=1, started_at=0, attempts=1, max_attempts='three' WHERE id=?", job_id)
    return job_id


@pytest.mark.slow  # seconds of real time (processes, connections, clocks)
def test_a_worker_starts_and_drains_past_a_row_it_cannot_read(db, queue, app_dir):
    bad = bad_running_row(queue, db)
    good = queue.enqueue_many([("nap", {}) for _ in range(5)])
    r = subprocess.run([sys.executable, "-m", "jobq_cli.main", "run", "--app", "taskapp",
                        "--burst", "--db", db], cwd=app_dir, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "job 1 set aside as dead: column max_attempts holds 'three'" in r.stderr
    assert {queue.get(i).status for i in good} == {"succeeded"}
    assert queue.get(bad).status == "dead"


@pytest.mark.slow  # seconds of real time (processes, connections, clocks)
def test_jobq_reap_sets_the_row_aside(db, queue, app_dir):
    bad = bad_running_row(queue, db)
    r = subprocess.run([sys.executable, "-m", "jobq_cli.main", "reap", "--db", db],
                       cwd=app_dir, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert queue.get(bad).status == "dead"


@pytest.mark.slow
def test_a_running_worker_keeps_beating_after_meeting_a_bad_row(db, queue, procs):
    worker = procs.start("run", "--app", "taskapp", "--lease", "1", "--db", db)
    wait_for(lambda: queue.workers())
    bad = bad_running_row(queue, db)
    wait_for(lambda: queue.get(bad).status == "dead")  # its reaper met the row
    beat = queue.workers()[0].last_seen
    wait_for(lambda: queue.workers()[0].last_seen > beat)  # the heartbeat thread lives on
    job = queue.enqueue("nap", {})
    wait_for(lambda: queue.get(job).status == "succeeded")
    assert worker.poll() is None
    assert "Exception in thread" not in procs.log(worker)
