"""Every ``jobq`` command on a PostgreSQL URL, given by --db or $JOBQ_DB, as on SQLite:
enqueue, a real worker process in burst mode, stats, list, show, workers, retry, cancel,
reap, prune, and the demo."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from jobq_cli.main import app
from jobq_core import Queue

runner = CliRunner()


def jobq(*args, env=None, input=None):
    result = runner.invoke(app, list(args), env=env, input=input, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.slow  # real processes or the real clock: seconds
def test_the_commands_work_on_a_postgresql_url(pg_url, app_dir):
    log = app_dir / "runs.log"
    env = {"JOBQ_DB": pg_url}
    ids = [int(jobq("enqueue", "record", json.dumps({"log": str(log)}), env=env).stdout)
           for _ in range(3)]
    boom = int(jobq("enqueue", "boom", "{}", "--max-attempts", "1", "--db", pg_url).stdout)
    later = int(jobq("enqueue", "record", "{}", "--delay", "3600", "--db", pg_url).stdout)

    proc = subprocess.run([sys.executable, "-m", "jobq_cli.main", "run", "--app", "taskapp",
                           "--burst", "--db", pg_url], cwd=app_dir, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.returncode == 0, proc.stderr
    assert len(log.read_text().splitlines()) == 3

    stats = json.loads(jobq("stats", "--json", env=env).stdout)
    assert stats["pending"] == 1 and stats["dead"] == 1
    listed = json.loads(jobq("list", "--status", "succeeded", "--json", env=env).stdout)
    assert sorted(j["id"] for j in listed) == ids
    shown = json.loads(jobq("show", str(boom), "--json", "--db", pg_url).stdout)
    assert shown["status"] == "dead"
    jobq("retry", str(boom), env=env)
    jobq("cancel", str(later), env=env)
    jobq("reap", env=env)
    jobq("workers", env=env)
    with Queue(pg_url) as q:
        assert q.get(boom).status == "pending" and q.get(later).status == "cancelled"
    assert "pruned" in jobq("prune", "--older-than", "0s", "--json", env=env).stdout


@pytest.mark.slow
def test_the_demo_runs_on_a_postgresql_url(pg_url, app_dir):
    proc = subprocess.run([sys.executable, "-m", "jobq_cli.main", "demo", "--db", pg_url,
                           "--duration", "3", "--no-monitor", "--workers", "1"],
                          cwd=app_dir, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert pg_url.split("/")[-1] in proc.stdout
    with Queue(pg_url) as q:
        assert q.count("succeeded") > 0


@pytest.mark.slow  # real processes or the real clock: seconds
def test_jobq_copy_moves_pending_and_dead_jobs_to_postgresql_and_back(pg_url, app_dir):
    sqlite_db = str(app_dir / "old.db")
    with Queue(sqlite_db) as q:
        q.enqueue_many([("record", {"i": i}) for i in range(1200)])
        q.enqueue("boom", {}, max_attempts=1)
        q.enqueue("boom", {}, queue="bad", max_attempts=1)  # to die: claimed by its queue
        job = q.claim("w", queues=["bad"])
        q.fail(job.id, job.token, "ValueError: nope")
    out = json.loads(jobq("copy", "--from", sqlite_db, "--to", pg_url, "--json").stdout)
    assert out["copied"] == {"pending": 1201, "running": 0, "waiting": 0, "dead": 1}
    with Queue(pg_url) as q:
        assert q.count("pending") == 1201 and q.count("dead") == 1
        assert q.list("dead")[0].error == "ValueError: nope"
    back = str(app_dir / "back.db")
    out = json.loads(jobq("copy", "--from", pg_url, "--to", back, "--json").stdout)
    assert out["copied"] == {"pending": 1201, "running": 0, "waiting": 0, "dead": 1}
    with Queue(sqlite_db) as old, Queue(back) as new:
        assert sorted(j.payload["i"] for j in new.list("pending", kind="record", limit=5000)) == \
            sorted(j.payload["i"] for j in old.list("pending", kind="record", limit=5000))


def test_jobq_copy_refuses_the_same_database_and_other_statuses(pg_url):
    for args in (("--from", pg_url, "--to", pg_url), ("--from", pg_url, "--to", "x.db",
                                                      "--status", "succeeded")):
        result = runner.invoke(app, ["copy", *args])
        assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
