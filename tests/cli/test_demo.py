"""The demo's first five minutes: separate worker processes with their pids, a hint to
kill one, and a monitor that tells the truth about it from start to end."""
from __future__ import annotations

import json
import os
import re
import signal
import site
import sqlite3
import subprocess
import sys
import time

import jobq_cli
import pytest
from demo_run import demo, stopped

from jobq_core import FORGET_AFTER, Queue, WorkerState
from jobq_core.testing import wait_for
from jobq_core.presentation.views.filters import Filter
from jobq_tui.source import Source
from jobq_tui.views import VIEWS
from jobq_tui.widgets.header import HeaderState, header_text

from .terminal import jobq_tty

pytestmark = pytest.mark.slow  # each runs `jobq demo` for 3 to 40 s of real time


def test_the_demo_runs_worker_processes_and_one_killed_is_seen_lost_and_its_jobs_move(app_dir):
    with demo(app_dir, "--duration", "90", "--db", "demo.db") as (p, lines, pids):
        assert len(set(pids)) == 2 and os.getpid() not in pids  # processes of their own
        hint = lines[-1]
        assert hint.startswith(f"Try it: kill -9 {pids[0]}") and "✗ lost" in hint
        db = app_dir / "demo.db"
        with Queue(db) as q:
            victim = next(w for w in q.workers() if w.pid == pids[0])
            assert (victim.beat_interval, victim.lease) == (2.0, 6.0)
            held = wait_for(lambda: [j.id for j in q.list("running") if j.worker == victim.id])
        os.kill(pids[0], signal.SIGKILL)
        source = Source(db, read_only=True)
        source.open()
        try:
            reads = []  # (seconds since its last beat, lost and said) of every read

            def lost_and_said():
                snap = source.poll(VIEWS["running"], Filter(), force=True)
                now = source.clock.now()
                [w] = [w for w in snap.workers if w.id == victim.id]
                text = header_text(snap, now, HeaderState("demo.db", True, 1.0, True, 10.0),
                                   False).plain
                said = w.state(now, 10.0) == WorkerState.LOST and "! 1 lost worker" in text
                reads.append((now - w.last_seen, said))
                return said
            wait_for(lost_and_said, timeout=30)
            # lost and said at every read judged 2.5 of its 2 s beats after its last beat
            # (judged at the read's own clock: how late a read comes on a loaded machine
            # is no part of the rule)
            assert all(said for since, said in reads if since > 2.5 * victim.beat_interval), reads
        finally:
            source.close()
        with Queue(db) as q:  # its jobs are taken back and run again elsewhere
            wait_for(lambda: all(q.get(i).worker != victim.id or q.get(i).status != "running"
                                 for i in held), timeout=20)
        out = stopped(p, 60)  # Ctrl-C once the jobs moved (test_processes waits one out)
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
    assert len(programs) == 5
    for program in programs:  # a path that runs from here, not a bare name off PATH
        assert os.sep in program and os.access(program, os.X_OK), program
    assert "its jobs wait for a worker: the header says ! no live worker" in r.stdout


def test_the_demos_hints_run_this_python_with_m_when_jobq_has_no_scripts_here(app_dir):
    """jobq imported from a source tree by a Python that has no jobq scripts beside it."""
    python = sys._base_executable  # the interpreter this virtual environment was made from
    assert not os.path.exists(os.path.join(os.path.dirname(python), "jobq"))
    tree = os.path.dirname(os.path.dirname(jobq_cli.__file__))
    env = {**os.environ, "PATH": "/usr/bin:/bin", "COLUMNS": "80",
           "PYTHONPATH": os.pathsep.join([tree, *site.getsitepackages()])}
    r = subprocess.run([python, "-m", "jobq_cli.main", "demo", "--duration", "2", "--workers",
                        "1", "--db", "demo.db"], cwd=app_dir, env=env, capture_output=True,
                       text=True, stdin=subprocess.DEVNULL, timeout=90)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    watch = next(ln for ln in lines if ln.startswith("Watch it live")).split(": ", 1)[1]
    assert watch == f"{python} -m jobq_tui.main demo.db"
    after = [ln.strip() for ln in lines[lines.index("Look around:") + 1:]]
    assert after[:3] == [f"{python} -m jobq_cli.main {args} --db demo.db"
                         for args in ("workers", "stats", "list --status dead")]
    for command in after[:3] + [watch + " --help"]:  # each runs as printed
        done = subprocess.run(command.split(), cwd=app_dir, env=env, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=60)
        assert done.returncode == 0, (command, done.stderr)


def cli(cwd, *args, columns=80):
    env = {**os.environ, "COLUMNS": str(columns)}
    env.pop("JOBQ_DB", None)
    return subprocess.run([sys.executable, "-m", "jobq_cli.main", *args, "--db", "demo.db"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def cli_json(cwd, *args):
    r = cli(cwd, *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.timeout(300)  # a demo run of 90 s, and more on a loaded machine
def test_what_the_demo_says_of_a_killed_worker_is_what_the_cli_shows_from_start_to_end(
        app_dir):
    with demo(app_dir, "--duration", "90", "--db", "demo.db") as (p, lines, pids):
        hint = lines[-1]
        assert hint.startswith(f"Try it: kill -9 {pids[0]} — ")
        assert "another worker takes its jobs" in hint
        assert f"After {FORGET_AFTER / 60:g} minutes without a beat it is forgotten." in hint
        victim = next(w for w in cli_json(app_dir, "workers") if w["pid"] == pids[0])
        assert victim["state"] == "ok" and victim["beat_interval"] == 2.0

        def running_under_victim():
            return [j for j in cli_json(app_dir, "list", "--status", "running")
                    if j["worker"] == victim["id"]]
        # a report takes 4 to 9 s: it is still running when the kill lands
        wait_for(lambda: any(j["kind"] == "report.build" for j in running_under_victim()),
                 timeout=30, interval=0.2)
        os.kill(pids[0], signal.SIGKILL)
        held = {j["id"]: j["attempts"] for j in running_under_victim()}  # it finishes none
        assert held

        # The worker turns lost 2.5 of its own 2 s beats after its last beat: every read
        # that began later than that says so. (Each read is judged at the clock of the
        # command, which reads it after it starts; how long a command takes to start on a
        # loaded machine is no part of the rule.)
        reads = []

        def state():
            started = time.time()
            [w] = [w for w in cli_json(app_dir, "workers") if w["id"] == victim["id"]]
            reads.append((started, w["last_seen"], w["state"]))
            return w["state"]
        wait_for(lambda: state() == "lost", timeout=30, interval=0.2)
        overdue = [(round(started - last_seen, 2), said) for started, last_seen, said in reads
                   if started - last_seen > 2.5 * victim["beat_interval"] and said != "lost"]
        assert not overdue, f"seconds after its last beat, and what a read said: {overdue}"
        rows = [line for line in cli(app_dir, "workers").stdout.splitlines()
                if line.startswith(victim["id"])]
        assert re.search(r"✗ lost .* \d+/8 stale ", rows[0]), rows
        for line in cli(app_dir, "list", "--status", "running", columns=200).stdout.splitlines():
            if victim["id"] in line:  # one of its jobs, not reaped yet: it says so
                assert f"{victim['id']} ✗ lost" in line, line

        # its jobs' leases run out; each is reaped (a human time in its error) and taken up
        def history(job_id):
            return cli_json(app_dir, "show", str(job_id))["history"]
        expired = re.compile(r"lease expired at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(")
        for job_id, attempt in held.items():
            ended = wait_for(lambda: next(
                (a for a in history(job_id) if a["attempt"] == attempt
                 and a["outcome"] != "running"), None), timeout=30, interval=0.3)
            assert ended["worker"] == victim["id"] and ended["outcome"] == "lease expired"
            assert expired.match(ended["error"]), ended["error"]
        retried = wait_for(lambda: [job_id for job_id, attempt in held.items()
                                    if any(a["attempt"] > attempt and a["worker"] not in
                                           (None, victim["id"]) for a in history(job_id))],
                           timeout=30, interval=0.3)
        assert retried  # run again by the other worker

        # forgotten after FORGET_AFTER without a beat: the victim's last beat made that old
        conn = sqlite3.connect(app_dir / "demo.db")
        with conn:
            conn.execute("UPDATE jobq_workers SET last_seen = last_seen - ? WHERE id = ?",
                         (FORGET_AFTER, victim["id"]))
        assert victim["id"] not in {w["id"] for w in cli_json(app_dir, "workers")}
        wait_for(lambda: conn.execute("SELECT count(*) FROM jobq_workers WHERE id = ?",
                                      (victim["id"],)).fetchone()[0] == 0,
                 timeout=20, interval=0.3)  # and the other worker's reaper deletes it
        conn.close()
        out = stopped(p, 90)
    assert f"  a worker ended: pid {pids[0]} (killed by SIGKILL)" in out
    assert f"a worker ended early: pid {pids[0]} (killed by SIGKILL)" in out
    summary = next(ln for ln in out.splitlines() if ln.startswith("demo summary"))
    assert summary.endswith("dead in total.")


def test_the_demo_on_an_80_column_terminal_draws_its_live_view_within_80_columns(app_dir):
    """A line of the live view wider than the terminal would wrap, and each redraw (the
    cursor moved up as many lines as were printed) would leave part of it behind."""
    r = jobq_tty(app_dir, "demo", "--duration", "3", "--no-monitor", "--db", "demo.db")
    assert r.returncode == 0 and r.styled, r.stdout
    live = r.raw[r.raw.index("Press Ctrl-C to stop."):r.raw.index("stopping:")]
    # what is drawn between two cursor movements (or line ends) is one screen line
    drawn = re.split(r"\r|\n|\x1b\[\d*[ABGKJ]", re.sub(r"\x1b\[[0-9;]*m", "", live))
    assert "PID" in live and max(len(segment) for segment in drawn) <= 80, drawn
