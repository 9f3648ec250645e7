"""SQLite's change signal: inotify on the database's files, confirmed by ``data_version``,
and polling ``data_version`` where inotify is missing."""
import os
import sys
import threading
import time

import pytest

from jobq_core import DatabaseUnavailable, Queue
from jobq_core.store.sqlite.watch import FileWatch
from jobq_core.testing import wait_for

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


def enqueue_elsewhere(db_path) -> None:
    """A commit by another connection."""
    with Queue(db_path) as q:
        q.enqueue("k")


@linux_only
def test_a_commit_by_another_connection_wakes_the_watch(db_path):
    Queue(db_path).close()
    watch = FileWatch.open(str(db_path))
    assert watch is not None and watch.arm()
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
    assert watch.arm()
    try:
        (tmp_path / "app.log").write_text("unrelated")
        assert watch.wait(0.05) is False
    finally:
        watch.close()


def inotify_watches(watch: FileWatch) -> int:
    """How many watches the kernel holds on the watch's inotify descriptor."""
    with open(f"/proc/self/fdinfo/{watch._fd}") as f:
        return sum(line.startswith("inotify wd:") for line in f)


@linux_only
def test_the_directory_is_watched_only_during_a_wait(db_path):
    """Each write to a watched file costs its writer a notification: a worker busy with its
    own commits must not be watching."""
    with Queue(db_path) as q:
        watch = q.watch()
        files = watch._files
        assert files is not None and inotify_watches(files) == 0
        seen = []
        waiter = threading.Thread(target=lambda: seen.append(watch.wait(5)))
        waiter.start()
        wait_for(lambda: inotify_watches(files) == 1)
        enqueue_elsewhere(db_path)
        waiter.join(5)
        assert seen == [True] and inotify_watches(files) == 0
        assert watch.wait(0) is False and inotify_watches(files) == 0
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
