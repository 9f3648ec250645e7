"""``jobq cancel ID --terminate`` against a real ``jobq run --pool process``: the child
stuck in C code (deaf to SIGTERM while it holds the GIL) is killed within 3 s and
replaced, the job is cancelled with its attempt recorded, and the next job runs; bad ids
get one line and a non-zero exit."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from proctree import alive

from jobq_core import Outcome

from .conftest import wait_for

pytestmark = pytest.mark.slow  # a real `jobq run --pool process` and its children
STOPPED_WITHIN = 3.0


def jobq(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jobq_cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def test_cancel_terminate_kills_the_running_child_and_the_pool_runs_the_next_job(
        db, queue, procs, app_dir):
    job_id = queue.enqueue("stuck")
    w = procs.start("run", "--app", "taskapp", "--pool", "process", "--concurrency", "1",
                    "--db", db)
    pid = int(wait_for(lambda: queue.get(job_id).progress_message, timeout=30))
    done = jobq("cancel", str(job_id), "--terminate", "--db", db, cwd=app_dir)
    cancelled = time.monotonic()
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"job {job_id} cancelled")
    # found within 0.75 s, SIGTERM unheard in C code, SIGKILL 1 s later
    wait_for(lambda: not alive(pid), timeout=STOPPED_WITHIN)
    assert time.monotonic() - cancelled < STOPPED_WITHIN
    job = queue.get(job_id)
    assert job.status == "cancelled" and "terminated" in job.error
    assert [a.outcome for a in queue.attempts(job_id)] == [Outcome.CANCELLED]
    after = queue.enqueue("nap", {})
    assert queue.wait(after, timeout=30).status == "succeeded", procs.log(w)


def test_cancel_terminate_of_a_finished_or_unknown_job_is_one_line_and_exit_1(db, queue,
                                                                               app_dir):
    job_id = queue.enqueue("nap")
    ok = jobq("cancel", str(job_id), "--terminate", "--json", "--db", db, cwd=app_dir)
    assert json.loads(ok.stdout) == {"id": job_id, "status": "cancelled"}
    for bad, says in ((str(job_id), "already cancelled"), ("4242", "no job with id 4242")):
        out = jobq("cancel", bad, "--terminate", "--db", db, cwd=app_dir)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 1 and len(lines) == 1 and says in lines[0], out.stderr
        assert "Traceback" not in out.stderr
