"""A completion that meets a database locked past the busy timeout (another process froze
holding the write lock) is written again while the lease lasts, not dropped."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from jobq_core import Queue, Registry, Worker
from jobq_core.testing import wait_for

HOLD = ("import sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE'); c.execute('UPDATE jobq_meta SET value=value')\n"
        "print('locked', flush=True); sys.stdin.read()\n")


@pytest.mark.stores("sqlite", why="a frozen process holding SQLite's file write lock")
def test_a_completion_blocked_by_a_frozen_lock_holder_is_written_once_it_lets_go(db):
    registry = Registry()
    release, ran = threading.Event(), []

    @registry.task("slow")
    def slow(payload):
        ran.append(1)
        release.wait(10)
        return "done"

    queue = Queue(db, busy_timeout=0.2)
    job_id = queue.enqueue("slow")
    worker = Worker(queue, registry, concurrency=1, lease=30)
    thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False})
    thread.start()
    try:
        wait_for(lambda: ran)
        holder = subprocess.Popen([sys.executable, "-c", HOLD, db],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert holder.stdout.readline() == "locked\n"
        os.kill(holder.pid, signal.SIGSTOP)
        release.set()  # the handler returns while every write is blocked
        with Queue(db) as reader:
            threading.Event().wait(1.0)  # a few tries fail meanwhile (busy timeout 0.2 s)
            assert reader.get(job_id).status == "running"
            os.kill(holder.pid, signal.SIGCONT)
            holder.stdin.close()
            holder.wait(10)
            wait_for(lambda: reader.get(job_id).status == "succeeded")
            assert reader.get(job_id).result == "done" and len(ran) == 1
    finally:
        release.set()
        worker.stop()
        thread.join(30)
        queue.close()
