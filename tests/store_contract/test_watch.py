"""The change signal: a watch wakes when another Queue commits, times out when nothing
happens, and ``wake()`` ends a wait from another thread."""
import threading
import time

import pytest


@pytest.fixture
def watch(queue):
    w = queue.watch()
    yield w
    w.close()


def test_a_watch_times_out_with_false_when_nothing_changes(watch):
    started = time.monotonic()
    assert watch.wait(0.1) is False
    assert time.monotonic() - started >= 0.09
    assert watch.wait(0) is False


def test_a_commit_by_another_queue_ends_a_wait_with_true(watch, open_queue):
    other = open_queue()
    writer = threading.Timer(0.05, other.enqueue, args=("k",))
    writer.start()
    started = time.monotonic()
    try:
        assert watch.wait(5) is True
        assert time.monotonic() - started < 2
    finally:
        writer.join()
    assert watch.wait(0.05) is False  # that change was reported; nothing new since


def test_a_commit_between_waits_is_not_missed(watch, open_queue):
    other = open_queue()
    other.enqueue("k")
    job = other.claim("w")
    other.complete(job.id, job.token)
    assert watch.wait(5) is True


def test_wake_ends_a_wait_from_another_thread(watch):
    threading.Timer(0.05, watch.wake).start()
    started = time.monotonic()
    assert watch.wait(5) is True
    assert time.monotonic() - started < 2


def test_two_watches_on_one_database_each_see_the_change(queue, open_queue):
    first, second = queue.watch(), open_queue().watch()
    try:
        open_queue().enqueue("k")
        assert first.wait(5) is True and second.wait(5) is True
    finally:
        first.close(), second.close()
