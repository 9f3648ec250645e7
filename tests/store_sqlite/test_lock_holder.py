"""A process frozen while it holds SQLite's write lock: the error a writer gets after the
busy timeout names it, and the monitor says that writes are blocked and by whom."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from jobq_core import DatabaseUnavailable, Queue

HOLD = textwrap.dedent("""
    import sqlite3, sys
    c = sqlite3.connect(sys.argv[1], isolation_level=None)
    c.execute("BEGIN IMMEDIATE")
    c.execute("UPDATE jobq_meta SET value=value")
    print("locked", flush=True)
    sys.stdin.read()
""")


@pytest.fixture
def frozen_holder(db_path):
    Queue(db_path).close()
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(db_path)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "locked\n"
    os.kill(p.pid, signal.SIGSTOP)
    yield p
    os.kill(p.pid, signal.SIGKILL)
    p.wait()


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="needs Linux's /proc/locks")
def test_the_busy_timeout_error_names_the_stopped_holder(db_path, frozen_holder):
    with Queue(db_path, busy_timeout=0.2) as q:
        with pytest.raises(DatabaseUnavailable) as e:
            q.enqueue("k")
        blockers = q.write_blockers()
    assert len(blockers) == 1
    blocker = blockers[0]
    assert blocker.startswith(f"pid {frozen_holder.pid} (") and blocker.endswith(", stopped)")
    assert f"held by pid {frozen_holder.pid} (" in str(e.value)
    assert "stopped)" in str(e.value)


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="needs Linux's /proc/locks")
def test_a_running_holder_is_not_a_blocker_and_no_holder_is_nothing(db_path):
    with Queue(db_path) as q:
        assert q.write_blockers() == []
        p = subprocess.Popen([sys.executable, "-c", HOLD, str(db_path)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert p.stdout.readline() == "locked\n"
            assert q.write_blockers() == []  # holding it briefly is what writers do
        finally:
            p.kill()
            p.wait()
