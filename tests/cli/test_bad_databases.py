"""Every command on a file that is not a usable jobq database: one clear line, a non-zero
exit, no traceback, and the file left as it was."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

from jobq_core import Queue

pytestmark = pytest.mark.slow  # every command run as a process on each bad file: seconds each


def _random_bytes(path):
    path.write_bytes(os.urandom(64 * 1024))


def _someone_elses_sqlite(path):
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE jobq_jobs(id INTEGER PRIMARY KEY, mine TEXT)")
    conn.commit()
    conn.close()


def _newer_schema(path):
    Queue(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE jobq_meta SET value='99' WHERE key='schema_version'")
    conn.commit()
    conn.close()


def _header_wiped(path):
    q = Queue(path)
    q.enqueue_many([("k", {"n": i}) for i in range(2000)])
    q.close()
    data = path.read_bytes()
    path.write_bytes(b"\0" * 100 + data[100:])


def _truncated(path):
    q = Queue(path)
    q.enqueue_many([("k", {"n": i, "pad": "x" * 300}) for i in range(3000)])
    q.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


BAD = {
    "random bytes": (_random_bytes, "not an SQLite database"),
    "someone else's SQLite file": (_someone_elses_sqlite, "did not create"),
    "a newer jobq schema": (_newer_schema, "newer than this jobq"),
    "a wiped header": (_header_wiped, "not an SQLite database"),
    "a truncated file": (_truncated, "corrupt"),
}
COMMANDS = [("stats",), ("list", "--status", "pending", "--limit", "5000"), ("show", "1"),
            ("enqueue", "k", "{}"), ("reap",), ("prune", "--older-than", "1s")]


def _jobq(*args):
    return subprocess.run([sys.executable, "-m", "jobq_cli.main", *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("bad", BAD, ids=list(BAD))
@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_command_on_a_bad_database_file_fails_in_one_line_and_leaves_it_alone(
        tmp_path, bad, command):
    path = tmp_path / "jobs.db"
    make, message = BAD[bad]
    make(path)
    before = path.read_bytes()
    result = _jobq(*command, "--db", str(path))
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jobq: "), result.stderr
    assert message in lines[0] and "Traceback" not in result.stderr
    assert result.stdout == ""
    if bad != "a truncated file":  # refused on opening: not a byte written
        assert path.read_bytes() == before
        assert not os.path.exists(f"{path}-wal")
