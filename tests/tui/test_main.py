"""``jobq-tui [PATH]``: bad paths exit 1 with a clear message and create nothing; bad
arguments exit 2; the database defaults to ``$JOBQ_DB`` as for every ``jobq`` command."""
import importlib.metadata
import os
import subprocess
import sys

import pytest

from jobq_tui.main import main, parser


def test_a_missing_path_exits_1_with_a_message_and_creates_no_file(tmp_path, capsys):
    path = tmp_path / "missing.db"
    assert main([str(path)]) == 1
    assert "no such database file" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_is_not_sqlite_exits_1(tmp_path, capsys):
    path = tmp_path / "notes.txt"
    path.write_text("hello\n" * 500)
    assert main([str(path)]) == 1
    assert "not an SQLite database" in capsys.readouterr().err
    assert path.read_text() == "hello\n" * 500


def test_an_sqlite_file_that_is_not_jobq_exits_1(tmp_path, capsys):
    path = tmp_path / "other.db"
    path.touch()
    assert main([str(path), "--read-only"]) == 1
    assert "not a jobq database" in capsys.readouterr().err


def test_a_control_character_in_the_path_is_not_echoed_raw(tmp_path, capsys):
    assert main([str(tmp_path / "x\x1b]0;t\x07.db")]) == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "␛]0;t␇" in err


@pytest.mark.parametrize("interval", ["0", "abc", "nan"])
def test_a_bad_interval_is_refused(tmp_path, interval, capsys):
    with pytest.raises(SystemExit) as e:
        main([str(tmp_path / "x.db"), "--interval", interval])
    assert e.value.code == 2


def test_the_console_script_runs(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "jobq_tui.main", str(tmp_path / "nope.db")],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1 and "jobq-tui:" in proc.stderr


def test_without_a_path_the_database_is_jobq_db(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JOBQ_DB", str(tmp_path / "from-env.db"))
    assert main([]) == 1
    assert "from-env.db" in capsys.readouterr().err
    assert parser().parse_args([]).path == str(tmp_path / "from-env.db")
    assert parser().parse_args(["given.db"]).path == "given.db"  # a path given wins


def test_without_a_path_or_jobq_db_the_database_is_jobs_db_here(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("JOBQ_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main([]) == 1
    assert "jobs.db" in capsys.readouterr().err and not os.path.exists("jobs.db")


def test_version_prints_the_installed_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"jobq-tui {importlib.metadata.version('jobq')}\n"
