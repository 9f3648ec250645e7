"""``jobq-tui PATH``: bad paths exit non-zero with a clear message and create nothing."""
import subprocess
import sys

import pytest

from jobq_tui.main import main


def test_a_missing_path_exits_2_with_a_message_and_creates_no_file(tmp_path, capsys):
    path = tmp_path / "missing.db"
    assert main([str(path)]) == 2
    assert "no such database file" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_is_not_sqlite_exits_2(tmp_path, capsys):
    path = tmp_path / "notes.txt"
    path.write_text("hello\n" * 500)
    assert main([str(path)]) == 2
    assert "not an SQLite database" in capsys.readouterr().err
    assert path.read_text() == "hello\n" * 500


def test_an_sqlite_file_that_is_not_jobq_exits_2(tmp_path, capsys):
    path = tmp_path / "other.db"
    path.touch()
    assert main([str(path), "--read-only"]) == 2
    assert "not a jobq database" in capsys.readouterr().err


def test_a_control_character_in_the_path_is_not_echoed_raw(tmp_path, capsys):
    assert main([str(tmp_path / "x\x1b]0;t\x07.db")]) == 2
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
    assert proc.returncode == 2 and "jobq-tui:" in proc.stderr
