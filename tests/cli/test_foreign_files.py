"""Files that are not jobq's: commands other than ``enqueue`` and ``run`` leave them
byte-for-byte as they were; a database reached through a dangling symlink is still created
owner-only."""
from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys

import pytest

from jobq_core import Queue

pytestmark = pytest.mark.slow  # every command run as a process on each foreign file: seconds each

READERS_AND_ADMIN = [["stats"], ["list"], ["workers"], ["show", "1"], ["reap"], ["retry", "1"],
                     ["cancel", "1"], ["prune", "--older-than", "1d"]]


def jobq(cwd, *args):
    return subprocess.run([sys.executable, "-m", "jobq_cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture(params=["an application's database", "an empty file"])
def foreign(request, tmp_path):
    path = tmp_path / "app.db"
    if request.param == "an empty file":
        path.touch(mode=0o644)
    else:
        con = sqlite3.connect(path)
        with con:
            con.execute("CREATE TABLE invoices(id INTEGER PRIMARY KEY, paid INTEGER)")
            con.execute("INSERT INTO invoices(paid) VALUES (0)")
        con.close()
    return path


@pytest.mark.parametrize("command", READERS_AND_ADMIN, ids=lambda c: c[0])
def test_commands_other_than_enqueue_and_run_leave_a_foreign_file_unchanged(tmp_path, foreign,
                                                                            command):
    before = foreign.read_bytes()
    mode = foreign.stat().st_mode
    r = jobq(tmp_path, *command, "--db", str(foreign))
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == (f"jobq: {foreign} is not a jobq database (it has no jobq tables; "
                        "`jobq enqueue` or `jobq run` creates them)\n")
    assert foreign.read_bytes() == before and foreign.stat().st_mode == mode
    assert sorted(os.listdir(tmp_path)) == ["app.db"]


def test_a_dangling_symlink_gets_an_owner_only_database_at_its_target(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "jobs.db").symlink_to("data/jobs.db")
    r = jobq(tmp_path, "enqueue", "k", "--db", "jobs.db")
    assert r.returncode == 0, r.stderr
    target = tmp_path / "data" / "jobs.db"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    with Queue(tmp_path / "jobs.db") as q:  # open: SQLite's -wal and -shm exist meanwhile
        assert q.get(1).kind == "k"
        sidecars = [p for p in (tmp_path / "data").iterdir() if p.name != "jobs.db"]
        assert sidecars and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in sidecars)
