"""SQLite's change signal: inotify on the database's files, confirmed by ``data_version``,
and polling ``data_version`` where inotify is missing."""
import os
import sys
import threading
import time

import pytest

from jobq_core import DatabaseUnavailable, Queue
from jobq_core.store.sqlite.watch import FileWatch

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


def enqueue_elsewhere(db_path) -> None:
    """A commit by another connection."""
    with Queue(db_path) as q:
        q.enqueue("k")


@linux_only
def test_a_commit_by_another_connection_wakes_the_watch(db_path):
    Queue(db_path).close()
    watch = FileWatch.open(str(db_path))
    assert watch is not None
    try:
        assert watch.wait(0.05) is False  # nothing happened: a timeout
        writer = threading.Timer(0.05, enqueue_elsewhere, args=(db_path,))
        writer.start()
        started = time.monotonic()
        assert watch.wait(5) is True
        assert time.monotonic() - started < 2
        writer.join()
    finally:
        watch.close()


@linux_only
def test_writes_to_other_files_in_the_directory_do_not_count(db_path, tmp_path):
    Queue(db_path).close()
    watch = FileWatch.open(str(db_path))
    try:
        (tmp_path / "app.log").write_text("unrelated")
        assert watch.wait(0.05) is False
    finally:
        watch.close()


@linux_only
def test_wake_ends_a_wait_from_another_thread(db_path):
    Queue(db_path).close()
    watch = FileWatch.open(str(db_path))
    try:
        threading.Timer(0.05, watch.wake).start()
        started = time.monotonic()
        assert watch.wait(5) is True and time.monotonic() - started < 2
    finally:
        watch.close()


def test_data_version_moves_only_when_another_connection_commits(queue):
    version = queue.store.data_version()
    queue.enqueue("k")  # this store's own commit
    assert queue.store.data_version() == version
    enqueue_elsewhere(queue.database)
    assert queue.store.data_version() != version


def test_without_inotify_the_watch_polls_data_version(queue, monkeypatch):
    monkeypatch.setattr(FileWatch, "open", classmethod(lambda cls, path: None))
    watch = queue.store.watch(poll_interval=0.01)
    try:
        assert watch.wait(0.05) is False
        threading.Timer(0.05, enqueue_elsewhere, args=(queue.database,)).start()
        started = time.monotonic()
        assert watch.wait(5) is True and time.monotonic() - started < 2
        threading.Timer(0.05, watch.wake).start()
        assert watch.wait(5) is True
    finally:
        watch.close()


@pytest.mark.parametrize("change", ["deleted", "replaced"])
def test_a_watch_on_a_file_deleted_or_replaced_raises_database_unavailable(db_path, change):
    with Queue(db_path) as q:
        watch = q.watch()
        try:
            if change == "deleted":
                os.remove(db_path)
            else:
                Queue(db_path.with_name("other.db")).close()
                os.replace(db_path.with_name("other.db"), db_path)
            with pytest.raises(DatabaseUnavailable, match=change):
                watch.wait(0.01)
        finally:
            watch.close()
