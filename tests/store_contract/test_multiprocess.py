"""Several processes on one database: every job completed exactly once, none lost. (The
store's integrity check then runs, as after every contract test.)"""
import collections
import os
import subprocess
import sys

import pytest

from jobq_core import Queue

pytestmark = pytest.mark.slow  # worker processes draining thousands of jobs

CLAIMER = os.path.join(os.path.dirname(__file__), "_claimer.py")


@pytest.mark.parametrize("batch", [1, 8])
def test_four_processes_complete_five_thousand_jobs_exactly_once(database, tmp_path, batch):
    db = database
    with Queue(db) as q:
        ids = q.enqueue_many([("k", {"i": i}) for i in range(5000)])
    go = tmp_path / "go"
    procs = []
    for n in range(4):
        out = tmp_path / f"out{n}"
        p = subprocess.Popen([sys.executable, CLAIMER, db, str(out), str(go), str(batch)],
                             stderr=subprocess.PIPE, text=True)
        procs.append((p, out))
    go.touch()
    completions = collections.Counter()
    per_process = []
    for p, out in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert "locked" not in err
        lines = out.read_text().splitlines()
        per_process.append(len(lines))
        completions.update(int(line.split()[0]) for line in lines)
    assert sorted(completions) == sorted(ids)  # none lost
    assert set(completions.values()) == {1}  # none completed twice
    assert sum(per_process) == 5000
    with Queue(db) as q:
        assert q.stats().pending == 0 and q.stats().running == 0
        jobs = q.list(status="succeeded", limit=6000)
        assert len(jobs) == 5000 and {j.attempts for j in jobs} == {1}
