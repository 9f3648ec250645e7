"""Queue picks the store from the database string, and refuses what no store takes."""
import os

import pytest

from jobq_core import Queue


def test_a_path_and_sqlite_urls_open_the_same_sqlite_file(tmp_path, monkeypatch):
    path = tmp_path / "jobs.db"
    with Queue(path) as q:
        job_id = q.enqueue("k")
    monkeypatch.chdir(tmp_path)
    for database in (str(path), f"sqlite://{path}", "sqlite:jobs.db", "jobs.db"):
        with Queue(database) as q:
            info = q.describe()
            assert info["store"] == "sqlite" and os.path.abspath(info["path"]) == str(path)
            assert q.get(job_id).kind == "k", database


def test_an_unknown_url_scheme_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="unsupported database URL scheme 'mysql'"):
        Queue("mysql://db.example/jobs")


def test_an_sqlite_url_naming_a_host_is_refused():
    with pytest.raises(ValueError, match="names a local file, not a host"):
        Queue("sqlite://server/jobs.db")


def test_an_empty_database_string_is_refused():
    with pytest.raises(ValueError, match="empty"):
        Queue("sqlite://")


def test_an_option_the_store_does_not_take_is_refused_before_any_file_is_made(tmp_path):
    path = tmp_path / "jobs.db"
    with pytest.raises(TypeError, match="does not take pool_size; its options are busy_timeout"):
        Queue(path, pool_size=4)
    assert not path.exists()
