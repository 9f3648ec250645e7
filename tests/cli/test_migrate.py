"""jobq migrate [--check], workers that may not migrate (--no-migrate), and the control
commands on a database that has no jobq tables yet, on both stores."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from jobq_cli.main import app
from jobq_core import Queue, SchemaOutdated

runner = CliRunner()


def jobq(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False, env={"COLUMNS": "160"})


def test_migrate_check_exits_1_naming_the_pending_migration_and_migrate_applies_it(
        adapter, database):
    newest = adapter.schema_version
    adapter.old_schema(database, newest - 1)
    checked = jobq("migrate", "--check", "--db", database)
    assert checked.exit_code == 1
    assert f"version {newest - 1}" in checked.stderr
    assert f"migration {newest} pending" in checked.stderr
    as_json = jobq("migrate", "--check", "--json", "--db", database)
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout) == {"current": False, "installed": newest - 1,
                                          "newest": newest, "pending": [newest]}
    with pytest.raises(SchemaOutdated, match="run `jobq migrate`"):
        Queue(database, migrate=False).check()  # --check changed nothing
    done = jobq("migrate", "--db", database)
    assert done.exit_code == 0, done.output
    assert f"version {newest}: current" in done.stdout
    again = jobq("migrate", "--check", "--json", "--db", database)
    assert again.exit_code == 0
    assert json.loads(again.stdout)["pending"] == []
    with Queue(database, migrate=False) as q:
        assert q.schema_version() == (newest, newest)


def test_migrate_check_on_a_database_without_jobq_tables_exits_1_and_creates_nothing(
        tmp_path):
    empty = tmp_path / "empty.db"
    empty.touch()
    checked = jobq("migrate", "--check", "--db", str(empty))
    assert checked.exit_code == 1
    assert "has no jobq tables yet" in checked.stderr
    assert empty.stat().st_size == 0
    missing = jobq("migrate", "--check", "--db", str(tmp_path / "missing.db"))
    assert missing.exit_code == 1 and not (tmp_path / "missing.db").exists()


def test_a_worker_with_no_migrate_refuses_an_older_schema_saying_to_run_jobq_migrate(
        adapter, database, tmp_path):
    adapter.old_schema(database, adapter.schema_version - 2)
    (tmp_path / "noapp.py").write_text("from jobq_core import Registry\nregistry = Registry()\n"
                                       "registry.task('noop')(lambda payload: None)\n")
    done = subprocess.run(
        [sys.executable, "-m", "jobq_cli.main", "run", "--app", "noapp", "--burst",
         "--no-migrate", "--db", database], cwd=tmp_path, capture_output=True, text=True,
        timeout=60, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 1
    assert "run `jobq migrate` first" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    with pytest.raises(SchemaOutdated):  # still refused: untouched
        Queue(database, migrate=False, create=False).check()


@pytest.mark.parametrize("command", [("limit", "mail", "--concurrency", "3"),
                                     ("pause", "mail"), ("resume", "mail")])
def test_the_control_commands_create_jobq_tables_in_a_new_database(command, tmp_path):
    db = str(tmp_path / "new.db")
    done = jobq(*command, "--db", db)
    assert done.exit_code == 0, done.output
    with Queue(db, create=False) as q:
        assert q.schema_version()[0] == q.schema_version()[1]


def test_the_control_commands_create_jobq_tables_in_a_new_postgresql_database(pg_url):
    done = jobq("limit", "mail", "--rate", "10/m", "--db", pg_url)
    assert done.exit_code == 0, done.output
    with Queue(pg_url, create=False) as q:
        assert str(q.queues()["mail"].rate) == "10/m"
