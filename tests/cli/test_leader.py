"""One maintenance leader per database, with real ``jobq run`` processes on each store:
``jobq workers`` names it, and when it is killed with SIGKILL another worker takes the
role over within a lease term and reaps what the dead worker held."""
from __future__ import annotations

import json
import os
import signal
import time

import pytest

from jobq_core import Queue

from .conftest import wait_for


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request, db):
    return db if request.param == "sqlite" else request.getfixturevalue("pg_url")


@pytest.mark.slow  # worker processes, and a lease to run out
def test_the_leader_killed_is_replaced_within_a_lease_term_and_reaping_resumes(
        target, procs, app_dir):
    lease = 1.5
    with Queue(target) as q:
        first = procs.start("run", "--app", "taskapp", "--db", target, "--lease", f"{lease}s",
                            "--queue", "work", name="first")
        wait_for(lambda: q.leader() is not None, timeout=30)
        second = procs.start("run", "--app", "taskapp", "--db", target, "--lease",
                             f"{lease}s", "--queue", "work", name="second")
        wait_for(lambda: len(q.workers()) == 2, timeout=30)
        leader = q.leader()
        by_pid = {w.pid: w.id for w in q.workers()}
        assert leader.worker == by_pid[first.pid]
        listed = json.loads(procs_run(app_dir, target))
        assert {w["id"]: w["leader"] for w in listed} == {
            by_pid[first.pid]: True, by_pid[second.pid]: False}

        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
        killed = time.monotonic()
        # A job the dead worker held: its lease runs out, and only a leader reaps it.
        q.enqueue("nap", {"first": 60}, queue="orphans")
        held = q.claim(by_pid[first.pid], queues=["orphans"], lease=0.5)
        wait_for(lambda: q.leader() is not None
                 and q.leader().worker == by_pid[second.pid], timeout=10 * lease)
        took_over = time.monotonic() - killed
        assert took_over < 3 * lease + 2.0, f"took over after {took_over:.2f}s"
        wait_for(lambda: q.get(held.id).status == "pending", timeout=4 * lease + 30)
        assert second.poll() is None


def procs_run(cwd, target: str) -> str:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "jobq_cli.main", "workers", "--json",
                           "--db", target], cwd=cwd, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout
