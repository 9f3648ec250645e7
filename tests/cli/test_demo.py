"""The demo's first five minutes: separate worker processes with their pids, a hint to
kill one, and a monitor that tells the truth about it from start to end."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

from jobq_core import Queue, WorkerState
from jobq_core.testing import wait_for
from jobq_tui.filters import Filter
from jobq_tui.source import Source
from jobq_tui.widgets.header import HeaderState, header_text


def test_the_demo_runs_worker_processes_and_one_killed_is_seen_lost_and_its_jobs_move(app_dir):
    env = {**os.environ, "COLUMNS": "80"}
    p = subprocess.Popen([sys.executable, "-m", "jobq_cli.main", "demo", "--duration", "25",
                          "--db", "demo.db"], cwd=app_dir, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env)
    try:
        lines = []
        while len([ln for ln in lines if "worker " in ln and ": pid " in ln]) < 2:
            lines.append(p.stdout.readline())
            assert lines[-1], "".join(lines) + p.stderr.read()
        pids = [int(m.group(1)) for ln in lines if (m := re.search(r": pid (\d+)", ln))]
        assert len(set(pids)) == 2 and os.getpid() not in pids  # processes of their own
        hint = p.stdout.readline()
        assert hint.startswith(f"Try it: kill -9 {pids[0]}") and "✗ lost" in hint
        db = app_dir / "demo.db"
        with Queue(db) as q:
            victim = next(w for w in q.workers() if w.pid == pids[0])
            assert (victim.beat_interval, victim.lease) == (2.0, 6.0)
            held = wait_for(lambda: [j.id for j in q.list("running") if j.worker == victim.id])
        os.kill(pids[0], signal.SIGKILL)
        killed_at = time.time()
        source = Source(db, read_only=True)
        source.open()
        try:
            def lost_and_said():
                snap = source.poll("running", Filter(), force=True)
                now = source.clock.now()
                states = {w.id: w.state(now, 10.0) for w in snap.workers}
                text = header_text(snap, now, HeaderState("demo.db", True, 1.0, True, 10.0),
                                   False).plain
                return states.get(victim.id) == WorkerState.LOST and "! 1 lost worker" in text
            wait_for(lost_and_said, timeout=15)
            assert time.time() - killed_at < 8  # 2.5 of its 2 s beats, and a poll
        finally:
            source.close()
        with Queue(db) as q:  # its jobs are taken back and run again elsewhere
            wait_for(lambda: all(q.get(i).worker != victim.id or q.get(i).status != "running"
                                 for i in held), timeout=20)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    assert f"a worker ended early: pid {pids[0]} (killed by SIGKILL)" in out
    summary = next(ln for ln in out.splitlines() if ln.startswith("demo summary"))
    assert summary.endswith("dead in total.")  # one line, not cut where a pipe is 80 wide


def test_the_demos_hints_name_commands_that_run_from_here(app_dir):
    env = {**os.environ, "PATH": "/usr/bin:/bin", "COLUMNS": "80"}  # no venv on PATH
    r = subprocess.run([sys.executable, "-m", "jobq_cli.main", "demo", "--duration", "2",
                        "--workers", "1", "--db", "demo.db"], cwd=app_dir, env=env,
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=90)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    watch = next(ln for ln in lines if ln.startswith("Watch it live"))
    after = lines[lines.index("Look around:") + 1:]
    programs = [watch.split(": ", 1)[1].split()[0]] + [ln.split()[0] for ln in after]
    assert len(programs) == 4
    for program in programs:  # a path that runs from here, not a bare name off PATH
        assert os.sep in program and os.access(program, os.X_OK), program
    assert "its jobs wait for a worker: the header says ! no live worker" in r.stdout
