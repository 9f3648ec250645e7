"""Input jobq refuses with one line and a non-zero exit, before anything is written or
started: numbers beyond 64 bits, times beyond the year 9999, leases that never end."""
from __future__ import annotations

import subprocess
import sys

import pytest

from jobq_core import Queue

BIG = "99999999999999999999"


def jobq(cwd, *args):
    return subprocess.run([sys.executable, "-m", "jobq_cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args, message", [
    (["show", BIG], "job id must fit in 64 bits"),
    (["retry", BIG], "job id must fit in 64 bits"),
    (["cancel", BIG], "job id must fit in 64 bits"),
    (["list", "--limit", BIG], "limit must fit in 64 bits"),
    (["enqueue", "k", "--priority", str(2**63)], "priority must fit in 64 bits"),
    (["enqueue", "k", "--max-attempts", str(2**63)], "max_attempts must fit in 64 bits"),
    (["enqueue", "k", "--delay", "1e20"], "the job would start after the year 9999"),
    (["enqueue", "k", "--delay", "inf"], "delay must be a finite number of seconds"),
    (["enqueue", "k", "[" * 5000 + "]" * 5000], "PAYLOAD_JSON is nested too deeply to read"),
    (["run", "--app", "taskapp", "--lease", "inf"], "lease must be a finite number of seconds"),
    (["run", "--app", "taskapp", "--lease", "1e300"], "lease must be at most 604800 seconds"),
    (["run", "--app", "taskapp", "--grace", "1e300"], "grace must be at most"),
])
def test_out_of_range_input_is_one_line_and_writes_nothing(app_dir, db, args, message):
    with Queue(db) as q:
        q.enqueue("existing")
    r = jobq(app_dir, *args, "--db", db)
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("jobq: ") and message in r.stderr
    assert r.stderr.count("\n") == 1 and r.stdout == ""
    with Queue(db) as q:
        assert [j.kind for j in q.list()] == ["existing"]
        assert q.workers() == []


def test_retry_force_takes_back_a_running_job_and_refuses_without_an_id(app_dir, db):
    with Queue(db) as q:
        job_id = q.enqueue("stuck")
        held = q.claim("gone-worker", lease=3600)
    r = jobq(app_dir, "retry", str(job_id), "--db", db)
    assert r.returncode == 1 and "a running one with force" in r.stderr
    r = jobq(app_dir, "retry", str(job_id), "--force", "--db", db)
    assert (r.returncode, r.stdout) == (0, "retried 1 job(s)\n")
    with Queue(db) as q:
        assert q.get(job_id).status == "pending" and q.get(job_id).token is None
        assert held.token is not None
    r = jobq(app_dir, "retry", "--all-dead", "--force", "--db", db)
    assert (r.returncode, r.stderr) == (1, "jobq: --force takes back one job: give its ID\n")
