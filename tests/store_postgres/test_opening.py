"""Opening a PostgreSQL URL: every failure is one line (the CLI's exit 1, no traceback),
the driver is loaded only for such a URL, and a missing driver says what to install."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from jobq_core import DatabaseUnavailable, JobqError, Queue

JOBQ = str(Path(sys.executable).with_name("jobq"))


def _jobq(*args, env=None):
    return subprocess.run([JOBQ, *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def _one_line_error(proc, *words):
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("jobq: ")
    for word in words:
        assert word in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


@pytest.mark.slow  # seconds of real time (a pilot session, processes or clocks)
def test_an_unreachable_server_is_one_line(pg_server):
    proc = _jobq("stats", "--db", "postgresql://postgres@127.0.0.1:1/jobq")
    _one_line_error(proc, "cannot connect", "127.0.0.1:1")


@pytest.mark.slow  # seconds of real time (processes, connections, clocks)
def test_a_missing_database_is_one_line(pg_server):
    url = pg_server.database_url("no_such_database_here")
    proc = _jobq("list", "--db", url)
    _one_line_error(proc, "no_such_database_here", "does not exist")


@pytest.mark.slow  # seconds of real time (processes, connections, clocks)
def test_an_unknown_user_is_one_line(pg_server, pg_url):
    parts = urlsplit(pg_url)
    url = parts._replace(netloc=f"nobody_here@{parts.hostname}:{parts.port}").geturl()
    proc = _jobq("stats", env={"JOBQ_DB": url})
    _one_line_error(proc, "nobody_here")


@pytest.mark.slow  # seconds of real time (processes, connections, clocks)
def test_a_password_in_the_url_never_shows_in_the_message(pg_server):
    proc = _jobq("stats", "--db", "postgresql://someone:s3cret-pw@127.0.0.1:1/jobq")
    _one_line_error(proc, "cannot connect")
    assert "s3cret-pw" not in proc.stderr


@pytest.mark.slow  # seconds of real time (processes, connections, clocks)
def test_a_bad_url_option_is_one_line():
    proc = _jobq("stats", "--db", "postgresql://postgres@127.0.0.1/x?poll_only=maybe")
    _one_line_error(proc, "poll_only")


def test_an_unknown_store_option_says_which_options_exist(pg_url):
    with pytest.raises(TypeError, match="poll_only"):
        Queue(pg_url, page_size=4096)


def test_without_the_driver_a_postgresql_url_says_what_to_install(tmp_path):
    code = ("import sys; sys.modules['psycopg'] = None\n"
            "from jobq_core import Queue, JobqError\n"
            "try:\n    Queue('postgresql://u@127.0.0.1/db')\n"
            "except JobqError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert "pip install 'jobq[postgres]'" in out
    assert len(out.strip().splitlines()) == 1


@pytest.mark.slow  # seconds of real time (processes, connections, clocks)
def test_the_sqlite_path_never_imports_the_postgresql_driver(tmp_path):
    code = ("import sys\nfrom jobq_core import Queue, Worker, Registry\n"
            "import jobq_cli.main, jobq_tui.source\n"
            f"q = Queue({str(tmp_path / 'jobs.db')!r}); q.enqueue('k'); q.claim('w'); q.stats()\n"
            "w = q.watch(); w.wait(0); w.close(); q.close()\n"
            "print(sorted(m for m in sys.modules if m.startswith('psycopg')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.strip() == "[]"


def test_a_closed_queue_says_so(pg_url):
    q = Queue(pg_url)
    q.close()
    with pytest.raises(DatabaseUnavailable, match="closed"):
        q.enqueue("k")
    assert issubclass(DatabaseUnavailable, JobqError)
