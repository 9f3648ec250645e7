"""Input jobq refuses with one line and a non-zero exit, before anything is written or
started: numbers beyond 64 bits, times beyond the year 9999, leases that never end."""
from __future__ import annotations

import subprocess
import sys

import pytest

from jobq_core import Queue

pytestmark = pytest.mark.slow  # each refusal checked on a real process: seconds each

BIG = "99999999999999999999"


def jobq(cwd, *args):
    return subprocess.run([sys.executable, "-m", "jobq_cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args, message, code", [
    (["show", BIG], "job id must fit in 64 bits", 1),
    (["retry", BIG], "job id must fit in 64 bits", 1),
    (["cancel", BIG], "job id must fit in 64 bits", 1),
    (["list", "--limit", BIG], "limit must fit in 64 bits", 1),
    (["enqueue", "k", "--priority", str(2**63)], "priority must fit in 64 bits", 1),
    (["enqueue", "k", "--max-attempts", str(2**63)], "max_attempts must fit in 64 bits", 1),
    (["enqueue", "k", "--delay", "99999999999w"], "the job would start after the year 9999", 1),
    (["enqueue", "k", "--delay", "inf"], "bad duration 'inf'", 2),
    (["enqueue", "k", "--delay", "1e20"], "bad duration '1e20'", 2),
    (["enqueue", "k", "[" * 5000 + "]" * 5000], "PAYLOAD_JSON is nested too deeply to read", 2),
    (["run", "--app", "taskapp", "--lease", "inf"], "bad duration 'inf'", 2),
    (["run", "--app", "taskapp", "--lease", "99999999w"], "lease must be at most 604800 seconds",
     1),
    (["run", "--app", "taskapp", "--grace", "99999999w"], "grace must be at most", 1),
])
def test_out_of_range_input_is_one_line_and_writes_nothing(app_dir, db, args, message, code):
    """Exit status 1, or 2 where the command line itself is malformed (a usage error)."""
    with Queue(db) as q:
        q.enqueue("existing")
    r = jobq(app_dir, *args, "--db", db)
    assert r.returncode == code, r.stderr
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
    assert (r.returncode, r.stderr) == (
        2, "jobq: retry: --force takes back one job: give its ID (see jobq retry --help)\n")
