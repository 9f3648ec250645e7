"""`jobq workers --json` and the monitor's Workers view say which pool a worker runs and,
for a process pool, each child's pid and state."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import wait_for

pytestmark = pytest.mark.slow  # a real worker process with a pool


def workers_json(app_dir, db):
    r = subprocess.run([sys.executable, "-m", "jobq_cli.main", "workers", "--json", "--db", db],
                       cwd=app_dir, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_jobq_workers_json_gives_the_pool_and_each_child(db, queue, procs, app_dir):
    thread = procs.start("run", "--app", "taskapp", "--queue", "default", "--lease", "1",
                         "--db", db)
    proc = procs.start("run", "--app", "taskapp", "--pool", "process", "--concurrency", "2",
                       "--queue", "slow", "--lease", "1", "--db", db)
    wait_for(lambda: len(queue.workers()) == 2)
    by_pid = lambda: {w["pid"]: w for w in workers_json(app_dir, db)}  # noqa: E731
    wait_for(lambda: len(by_pid()[proc.pid]["children"] or []) == 2, timeout=30)
    w = by_pid()
    assert (w[thread.pid]["pool"], w[thread.pid]["children"]) == ("thread", [])
    children = w[proc.pid]["children"]
    assert w[proc.pid]["pool"] == "process"
    assert {c["state"] for c in children} <= {"starting", "idle", "busy"}
    assert len({c["pid"] for c in children}) == 2 and proc.pid not in {c["pid"] for c in children}
    job = queue.enqueue("nap", {"first": 5}, queue="slow")  # only the process pool serves it
    wait_for(lambda: any(c["job"] == job and c["state"] == "busy"
                         for c in by_pid()[proc.pid]["children"] or []), timeout=60)  # a loaded machine
