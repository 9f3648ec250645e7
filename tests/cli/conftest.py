from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from jobq_core import Queue
from jobq_core.testing import wait_for  # noqa: F401 - the tests import it from here

HERE = Path(__file__).parent


@pytest.fixture
def app_dir(tmp_path, monkeypatch):
    """A working directory holding the test app module ``taskapp``."""
    shutil.copy(HERE / "taskapp.py", tmp_path / "taskapp.py")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JOBQ_DB", raising=False)
    return tmp_path


@pytest.fixture
def db(app_dir):
    return str(app_dir / "jobs.db")


@pytest.fixture
def queue(db):
    with Queue(db) as q:
        yield q


class Procs:
    """``jobq`` subprocesses of one test; whatever is still alive at the end is killed."""

    def __init__(self, cwd: Path):
        self.cwd = cwd
        self.procs: list[subprocess.Popen] = []

    def start(self, *args: str, name: str = "jobq", session: bool = False) -> subprocess.Popen:
        """``session``: in a session (and process group) of its own, as a shell job is."""
        log = open(self.cwd / f"{name}-{len(self.procs)}.log", "w")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        p = subprocess.Popen([sys.executable, "-m", "jobq_cli.main", *args], cwd=self.cwd,
                             stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=env, text=True, start_new_session=session)
        p.log_path = log.name
        self.procs.append(p)
        return p

    @staticmethod
    def log(p: subprocess.Popen) -> str:
        return Path(p.log_path).read_text()

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                p.kill()
                p.wait(5)


@pytest.fixture
def procs(app_dir):
    ps = Procs(app_dir)
    yield ps
    ps.close()
