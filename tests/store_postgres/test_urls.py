"""Every URL psql accepts opens a jobq store: libpq gets the URL as it was written (only
jobq's own options taken out), so ``%20`` stays a space, a Unix socket's directory in
``?host=`` or in the host part works, and a multi-host list is tried host after host."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, urlsplit

import psycopg
import pytest

from jobq_core import Queue
from jobq_core.store.postgres.connection import parse_url

JOBQ = str(Path(sys.executable).with_name("jobq"))


def _parts(url: str) -> tuple[str, int, str]:
    p = urlsplit(url)
    return p.hostname, p.port, p.path.lstrip("/")


def _socket_dir(pg_server) -> str:
    if not pg_server.datadir:
        pytest.skip("the server's Unix socket directory is known only for the throwaway cluster")
    return os.path.dirname(pg_server.datadir)


def _opens_and_runs_a_job(url: str) -> None:
    q = Queue(url)
    try:
        q.enqueue("noop", {"x": 1})
        assert q.stats().pending == 1
    finally:
        q.close()


def test_a_percent_encoded_space_in_options_reaches_the_server(pg_server, pg_url):
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute("CREATE SCHEMA app")
    url = f"{pg_url}?options=-c%20search_path%3Dapp"
    _opens_and_runs_a_job(url)
    with psycopg.connect(pg_url, autocommit=True) as c:
        where = c.execute("SELECT table_schema FROM information_schema.tables "
                          "WHERE table_name = 'jobq_jobs'").fetchall()
    assert where == [("app",)]


def test_the_unix_socket_form_with_host_in_the_query_opens(pg_server, pg_url):
    sockets = _socket_dir(pg_server)
    _, port, db = _parts(pg_url)
    _opens_and_runs_a_job(f"postgresql:///{db}?host={sockets}&port={port}&user=postgres")


def test_the_unix_socket_form_with_an_encoded_directory_as_host_opens(pg_server, pg_url):
    sockets = _socket_dir(pg_server)
    _, port, db = _parts(pg_url)
    _opens_and_runs_a_job(f"postgresql://postgres@{quote(sockets, safe='')}:{port}/{db}")


def test_a_multi_host_url_tries_the_next_host_when_the_first_is_down(pg_url):
    host, port, db = _parts(pg_url)
    _opens_and_runs_a_job(f"postgresql://postgres@{host}:1,{host}:{port}/{db}")


def test_jobq_options_are_taken_out_and_the_rest_is_passed_as_written():
    conninfo, display, ours = parse_url(
        "postgresql://u:pw@h1:5432,h2:5433/db?options=-c%20search_path%3Dapp"
        "&poll_only=true&sslmode=prefer")
    assert conninfo == "postgresql://u:pw@h1:5432,h2:5433/db?options=-c%20search_path%3Dapp&sslmode=prefer"
    assert ours == {"poll_only": True}
    assert display == "postgresql://u@h1:5432,h2:5433/db"
    assert "pw" not in display


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql:///db?host=/var/run/postgresql", "postgresql:///db?host=/var/run/postgresql"),
    ("postgresql://%2Fvar%2Frun%2Fpostgresql/db", "postgresql://%2Fvar%2Frun%2Fpostgresql/db"),
    ("postgresql://u:pw@[::1]:5432/db", "postgresql://u@[::1]:5432/db"),
    ("postgresql://db.example/jobs?password=pw&port=6000&sslmode=require",
     "postgresql://db.example/jobs?port=6000"),
    ("postgresql://", "postgresql://localhost/"),
])
def test_the_url_shown_in_messages_names_where_without_the_password(url, shown):
    assert parse_url(url)[1] == shown


@pytest.mark.parametrize("url", [
    "postgresql://u@h1:54x2/db",
    "postgresql://u@h1:5432,h2:nope/db",
    "postgresql://u@[::1/db",
])
def test_a_bad_port_or_host_is_one_clear_error(url):
    with pytest.raises(ValueError, match="database URL"):
        parse_url(url)


@pytest.mark.slow  # real processes or the real clock: seconds
def test_jobq_stats_opens_a_multi_host_url_and_shows_it(pg_url):
    with Queue(pg_url) as q:
        q.check()  # jobq's tables: a Queue connects on first use
    host, port, db = _parts(pg_url)
    url = f"postgresql://postgres@{host}:1,{host}:{port}/{db}?options=-c%20work_mem%3D8MB"
    proc = subprocess.run([JOBQ, "stats", "--db", url], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    assert f"{host}:1,{host}:{port}" in proc.stdout
