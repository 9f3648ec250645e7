"""The idle worker's wake-up: a write to the database by another process ends the wait."""
import sys
import threading
import time

import pytest

from jobq_core import Queue
from jobq_core.store.sqlite.watch import FileWatch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


def test_a_commit_by_another_connection_wakes_the_watch(db_path):
    Queue(db_path).close()
    watch = FileWatch.open(str(db_path))
    assert watch is not None
    try:
        assert watch.wait(0.05) is False  # nothing happened: a timeout
        writer = threading.Timer(0.05, lambda: Queue(db_path).enqueue("k"))
        writer.start()
        started = time.monotonic()
        assert watch.wait(5) is True
        assert time.monotonic() - started < 2
        writer.join()
    finally:
        watch.close()


def test_writes_to_other_files_in_the_directory_do_not_count(db_path, tmp_path):
    Queue(db_path).close()
    watch = FileWatch.open(str(db_path))
    try:
        (tmp_path / "app.log").write_text("unrelated")
        assert watch.wait(0.05) is False
    finally:
        watch.close()


def test_wake_ends_a_wait_from_another_thread(db_path):
    Queue(db_path).close()
    watch = FileWatch.open(str(db_path))
    try:
        threading.Timer(0.05, watch.wake).start()
        started = time.monotonic()
        assert watch.wait(5) is True and time.monotonic() - started < 2
    finally:
        watch.close()
