from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys

import pytest
from checker import check
from history import read_history

from jobq_core import Queue
from jobq_core.testing import wait_for

HERE = os.path.dirname(os.path.abspath(__file__))


class ChaosRun:
    """Real worker and producer processes on one database, with a shared history log."""

    def __init__(self, tmp_path, db: str | None = None):
        self.db = db or str(tmp_path / "jobs.db")
        self.history = str(tmp_path / "history.jsonl")
        self.logs = tmp_path
        self.procs: list[subprocess.Popen] = []
        self.faults = 0
        Queue(self.db).close()

    def _spawn(self, script: str, *args: str, env: dict | None = None,
               file_limit: int | None = None, host=None) -> subprocess.Popen:
        n = len(self.procs)
        log = open(self.logs / f"proc{n}.log", "w")
        argv = [sys.executable, os.path.join(HERE, script), *args]
        p = subprocess.Popen(host.command(argv) if host else argv,
                             stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
                             preexec_fn=None if file_limit is None else _limit_files(file_limit))
        log.close()
        self.procs.append(p)
        return p

    def worker(self, *opts: str, env: dict | None = None,
               file_limit: int | None = None, host=None) -> subprocess.Popen:
        """``file_limit``: RLIMIT_FSIZE for the process (a full disk, as it sees it);
        SIGUSR1 lifts it. ``host``: a ``netns.Host`` to run it on, reaching the database
        through that host's relay."""
        db = host.url(self.db) if host else self.db
        return self._spawn("chaos_worker.py", db, self.history, *opts, env=env,
                           file_limit=file_limit, host=host)

    def producer(self, batches: int, size: int) -> subprocess.Popen:
        return self._spawn("producer.py", self.db, self.history, str(batches), str(size))

    def enqueue(self, items) -> list[int]:
        from history import HistoryWriter

        with Queue(self.db) as q:
            ids = q.enqueue_many(items)
        w = HistoryWriter(self.history)
        w.write("enqueued", ids=ids)
        w.close()
        return ids

    def kill(self, p: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
        p.send_signal(sig)
        self.faults += 1

    def events(self) -> list[dict]:
        return read_history(self.history)

    def wait_for(self, condition, timeout: float, what: str) -> None:
        try:
            wait_for(condition, timeout, interval=0.02)
        except AssertionError:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; "
                                 f"logs in {self.logs}") from None

    def unfinished(self) -> int:
        with Queue(self.db, read_only=True) as q:
            s = q.stats()
            return s.pending + s.running + s.waiting

    def check(self, **kwargs):
        return check(self.events(), self.db, **kwargs)

    def stop(self, *workers: subprocess.Popen, timeout: float = 60.0) -> None:
        """SIGTERM each live worker once it handles SIGTERM (a worker still starting up, as
        a respawned one may be on a loaded machine, would die of the signal's default
        action), then assert that each exits cleanly."""
        self.wait_for(lambda: all(w.poll() is not None or _catches_sigterm(w.pid)
                                  for w in workers), 30, "the workers to handle SIGTERM")
        for w in workers:
            if w.poll() is None:
                w.send_signal(signal.SIGTERM)
        for w in workers:
            assert w.wait(timeout=timeout) == 0, f"worker {w.pid}: logs in {self.logs}"

    def stop_all(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
            p.wait()


def _catches_sigterm(pid: int) -> bool:
    """Whether the process has a handler for SIGTERM (its SigCgt mask, from /proc)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            caught = next(line for line in f if line.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return False  # gone already: its exit status tells
    return bool(int(caught.split()[1], 16) >> (signal.SIGTERM - 1) & 1)


def _limit_files(size: int):
    def limit() -> None:  # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
    return limit


@pytest.fixture
def chaos(tmp_path):
    run = ChaosRun(tmp_path)
    yield run
    run.stop_all()


@pytest.fixture
def pg_chaos(tmp_path, pg_url):
    """The same, on a fresh PostgreSQL database."""
    run = ChaosRun(tmp_path, pg_url)
    yield run
    run.stop_all()


@pytest.fixture
def soak(request) -> float:
    return float(request.config.getoption("--soak"))
