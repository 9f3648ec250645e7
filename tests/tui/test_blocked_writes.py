"""The monitor says when every write is blocked by a process frozen holding the lock."""
import os
import signal
import subprocess
import sys

import pytest

from conftest import make_app, settle
from jobq_core import Queue
from jobq_core.testing import FakeClock

HOLD = ("import sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE'); c.execute('UPDATE jobq_meta SET value=value')\n"
        "print('locked', flush=True); sys.stdin.read()\n")


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="needs Linux's /proc/locks")
@pytest.mark.slow  # seconds of real time (a pilot session, processes or clocks)
async def test_a_banner_names_the_stopped_process_holding_the_write_lock(tmp_path):
    path = tmp_path / "jobs.db"
    Queue(path).close()
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "locked\n"
        os.kill(p.pid, signal.SIGSTOP)
        app = make_app(path, FakeClock())
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            banner = app.query_one("#banner")
            assert banner.display
            text = str(banner.render())
            assert text.startswith("✗ writes are blocked: the write lock is held by "
                                   f"pid {p.pid} (")
            assert "stopped)" in text
            os.kill(p.pid, signal.SIGCONT)
            p.stdin.close()
            p.wait(10)
            app.request_poll(True)
            await settle(pilot)
            assert not app.query_one("#banner").display
    finally:
        p.kill()
        p.wait()
