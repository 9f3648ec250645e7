"""Every ``jobq`` command on a PostgreSQL URL, given by --db or $JOBQ_DB, as on SQLite:
enqueue, a real worker process in burst mode, stats, list, show, workers, retry, cancel,
reap, prune, and the demo."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from typer.testing import CliRunner

from jobq_cli.main import app
from jobq_core import Queue

runner = CliRunner()


def jobq(*args, env=None, input=None):
    result = runner.invoke(app, list(args), env=env, input=input, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


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


def test_the_demo_runs_on_a_postgresql_url(pg_url, app_dir):
    proc = subprocess.run([sys.executable, "-m", "jobq_cli.main", "demo", "--db", pg_url,
                           "--duration", "3", "--no-monitor", "--workers", "1"],
                          cwd=app_dir, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert pg_url.split("/")[-1] in proc.stdout
    with Queue(pg_url) as q:
        assert q.count("succeeded") > 0
