"""``jobq run --wait-for-db``: a worker started while its PostgreSQL server is down (or
starting up) keeps trying for that long, says so once, and runs its jobs once the server
answers; one the server refuses (no such database) fails at once, as does any with 0."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from urllib.parse import urlsplit, urlunsplit

import pytest

from jobq_core import Queue

pytestmark = pytest.mark.slow  # a PostgreSQL cluster of its own, stopped and started


@pytest.fixture
def cluster(own_pg_cluster):
    return own_pg_cluster


def run(url: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "jobq_cli.main", "run", "--app", "taskapp",
                             "--burst", "--db", url, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_a_worker_started_before_its_server_waits_for_it_and_runs_its_jobs(cluster, app_dir):
    log = app_dir / "runs.log"
    with Queue(cluster.url) as q:
        job = q.enqueue("record", {"log": str(log)})
    with cluster.halted():
        worker = run(cluster.url, "--wait-for-db", "60s")
        assert worker.stderr is not None
        first = worker.stderr.readline()  # its first line: the wait, nothing before it
        assert "cannot connect" in first and "trying again for up to 60s" in first, first
        assert worker.poll() is None  # still trying
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    assert "the database answered after" in err, err
    assert [line.split()[0] for line in log.read_text().splitlines()] == [str(job)]
    with Queue(cluster.url) as q:
        assert q.get(job).status == "succeeded"


def test_a_server_down_with_no_wait_and_a_database_refused_fail_at_once(cluster, app_dir):
    parts = urlsplit(cluster.url)
    missing = urlunsplit(parts._replace(path="/no_such_database"))
    began = time.monotonic()
    refused = run(missing, "--wait-for-db", "60s")  # the server answers: no such database
    _, err = refused.communicate(timeout=60)
    assert refused.returncode == 1 and "trying again" not in err, err
    assert "no_such_database" in err and "Traceback" not in err, err
    assert time.monotonic() - began < 30
    with cluster.halted():
        down = run(cluster.url, "--wait-for-db", "0")
        _, err = down.communicate(timeout=60)
    assert down.returncode == 1 and "cannot connect" in err and "trying again" not in err, err
    assert "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_a_negative_wait_is_a_usage_error(app_dir):
    proc = subprocess.run([sys.executable, "-m", "jobq_cli.main", "run", "--app", "taskapp",
                           "--wait-for-db", "-1s"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--wait-for-db" in proc.stderr, proc.stderr
