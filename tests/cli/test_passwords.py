"""A password in a database URL is never shown: not by a read command's header, not by
the live view of ``jobq run``, not by the monitor's header. The tests' server trusts every
local connection, so a URL may carry any password and still connect."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from jobq_cli.main import app
from jobq_core import Queue
from jobq_core.presentation.display import masked_url

from .terminal import jobq_tty

runner = CliRunner()
SECRET = "s3cr3t-pw"


def with_password(url: str, form: str) -> str:
    """``postgresql://postgres@host/db`` with a password in the userinfo or the query."""
    if form == "userinfo":
        return url.replace("postgres@", f"postgres:{SECRET}@", 1)
    return f"{url}?connect_timeout=5&password={SECRET}"


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://app:hunter2@db.example:5432/jobs",
     "postgresql://app:***@db.example:5432/jobs"),
    ("postgres://app:p%40ss:word@h1:5432,h2:5432/jobs?sslmode=require",
     "postgres://app:***@h1:5432,h2:5432/jobs?sslmode=require"),
    ("postgresql://app@db/jobs?options=-c%20search_path%3Dapp&password=hunter2",
     "postgresql://app@db/jobs?options=-c%20search_path%3Dapp&password=***"),
    ("postgresql:///jobs?host=/var/run/postgresql&PassWord=x&sslpassword=y#frag",
     "postgresql:///jobs?host=/var/run/postgresql&PassWord=***&sslpassword=***#frag"),
    ("postgresql://app@db/jobs", "postgresql://app@db/jobs"),
    ("sqlite:///var/lib/a:b@c.db", "sqlite:///var/lib/a:b@c.db"),
    ("./user:pw@host.db", "./user:pw@host.db"),
])
def test_masked_url_hides_the_password_and_keeps_the_rest_as_written(url, shown):
    assert masked_url(url) == shown


@pytest.mark.parametrize("form", ["userinfo", "query"])
def test_stats_never_prints_the_password_of_its_url(pg_url, app_dir, form):
    with Queue(pg_url) as q:
        q.check()  # connects (on first use): jobq's tables made
    url = with_password(pg_url, form)
    for args in (["stats", "--db", url], ["stats"]):
        result = runner.invoke(app, args, env={"JOBQ_DB": url, "COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        assert SECRET not in result.output and "***" in result.output, result.output
        assert "127.0.0.1" in result.output


def test_the_live_view_of_jobq_run_never_shows_the_password(pg_url, app_dir):
    """(The view cuts the URL at 40 characters: a password in the query is past the cut.)"""
    url = with_password(pg_url, "userinfo")
    r = jobq_tty(app_dir, "run", "--app", "taskapp", "--burst", "--db", url, columns=200)
    assert r.returncode == 0 and r.styled, r.stdout
    assert "jobq worker" in r.stdout and "postgres:***@" in r.stdout, r.stdout
    assert SECRET not in r.raw, r.raw
