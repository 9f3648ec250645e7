"""Worker processes of a script in this folder on one database that also holds an
application's tables: what ``test_exactly_once.py`` and ``test_keys_chaos.py`` run."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from stores import AppDB

from jobq_core import Queue
from jobq_core.testing import wait_for

HERE = os.path.dirname(os.path.abspath(__file__))


class AppRun:
    """Worker processes of ``script`` (``app_worker.py``) on one database with an
    ``accounts`` table."""

    script = "app_worker.py"

    def __init__(self, tmp_path, db: str, rows: int):
        self.db = db
        self.tmp = tmp_path
        self.procs: list[subprocess.Popen] = []
        self.kills = 0
        Queue(db).close()
        with AppDB(db) as app:
            app.create_accounts(rows)

    def worker(self, *opts: str, env: dict | None = None) -> subprocess.Popen:
        log = open(self.tmp / f"worker{len(self.procs)}.log", "w")
        p = subprocess.Popen([sys.executable, os.path.join(HERE, self.script), self.db,
                              *opts], stdout=log, stderr=subprocess.STDOUT,
                             env={**os.environ, **(env or {})})
        log.close()
        self.procs.append(p)
        return p

    def kill(self, p: subprocess.Popen) -> None:
        p.kill()
        p.wait()
        self.kills += 1

    def freeze(self, p: subprocess.Popen) -> None:
        """SIGSTOP ``p``, at a moment it holds no SQLite write lock (one of its threads may
        be mid-heartbeat): a process stopped holding it would stop every writer."""
        with Queue(self.db, read_only=True) as q:
            for _ in range(100):
                p.send_signal(signal.SIGSTOP)
                time.sleep(0.02)
                if not q.write_blockers():
                    return
                p.send_signal(signal.SIGCONT)
                time.sleep(0.01)
        raise AssertionError("the process kept holding the write lock")

    def counts(self) -> dict[int, int]:
        with AppDB(self.db) as app:
            return app.counts()

    def jobs(self, limit: int = 10_000):
        with Queue(self.db, read_only=True) as q:
            return q.list(limit=limit, payloads=False)

    def unfinished(self) -> int:
        with Queue(self.db, read_only=True) as q:
            s = q.stats()
            return s.pending + s.running

    def wait_for(self, condition, timeout: float, what: str) -> None:
        try:
            wait_for(condition, timeout, interval=0.05)
        except AssertionError:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; "
                                 f"logs in {self.tmp}") from None

    def stop_all(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
            p.wait()
