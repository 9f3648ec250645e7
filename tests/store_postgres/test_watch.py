"""The change signal on PostgreSQL: an enqueue in another process wakes a waiter through
LISTEN/NOTIFY within milliseconds; notifications are limited per queue (the first after a
quiet window at once, one trailing at the window's end) and the last job of a burst still
wakes; poll-only mode finds changes by its snapshot poll; the poll
writes nothing (it works on a read-only session); a watch made while new connections fail
at once is made all the same, and listens once they work again."""
from __future__ import annotations

import threading
import time
from urllib.parse import urlsplit

import psycopg
import pytest

from jobq_core import Queue
from jobq_core.store.postgres.notify import Notifier
from jobq_core.testing import wait_for
from relay import Relay


def _after(seconds, fn):
    t = threading.Timer(seconds, fn)
    t.start()
    return t


@pytest.fixture
def producer(pg_url):
    with Queue(pg_url) as q:
        yield q


def test_an_enqueue_wakes_a_listening_waiter_at_once(pg_url, producer):
    with Queue(pg_url, poll_interval=30.0) as q:
        w = q.watch()
        try:
            assert not w.wait(0)
            t = _after(0.2, lambda: producer.enqueue("k"))
            started = time.monotonic()
            assert w.wait(10)
            took = time.monotonic() - started
            t.join()
        finally:
            w.close()
    assert took < 1.0  # the poll is 30 s away: only the notification can explain this


def test_a_burst_sends_few_notifications_and_the_last_job_still_wakes(pg_url, producer,
                                                                     monkeypatch):
    # a window wider than an enqueue on a busy machine, so that the burst is one
    monkeypatch.setattr(Notifier, "EVERY", 0.05)
    with Queue(pg_url, poll_interval=30.0) as q, psycopg.connect(pg_url, autocommit=True) as c:
        c.execute("LISTEN jobq")
        started = time.monotonic()
        for _ in range(50):
            producer.enqueue("k", queue="burst")
        took = time.monotonic() - started
        w = q.watch()
        try:
            got = list(c.notifies(timeout=0.5))
            # at most one per window while the burst lasts, and a trailing one
            assert 1 <= len(got) <= took / Notifier.EVERY + 2 and len(got) < 25, (len(got), took)
            assert {n.payload for n in got} == {"burst"}
            w.wait(0)  # take what is pending
            time.sleep(2 * Notifier.EVERY)  # past the window
            producer.enqueue("k", queue="burst")
            producer.enqueue("k", queue="burst")  # held back: sent by the trailing timer
            assert w.wait(0.2)
            assert w.wait(1.0)
        finally:
            w.close()


def test_the_first_enqueue_after_a_quiet_window_notifies_at_once_and_a_held_one_at_its_end(
        pg_url, producer, monkeypatch):
    monkeypatch.setattr(Notifier, "EVERY", 0.3)  # wider than three enqueues on a busy machine
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute("LISTEN jobq")
        time.sleep(2 * Notifier.EVERY)
        producer.enqueue("k", queue="a")
        first = time.monotonic()
        producer.enqueue("k", queue="a")  # inside the window: held
        producer.enqueue("k", queue="b")  # another queue has a window of its own
        got = []
        for n in c.notifies(timeout=1.0, stop_after=3):
            got.append((n.payload, time.monotonic() - first))
        assert [p for p, _ in got] == ["a", "b", "a"], got
        assert got[0][1] < Notifier.EVERY and got[1][1] < Notifier.EVERY, got
        # the held one: after the window, and not long after (not the next poll)
        assert 0.5 * Notifier.EVERY < got[2][1] < Notifier.EVERY + 0.25, got


def test_poll_only_mode_sends_no_notification_and_finds_changes_by_polling(pg_url):
    url = pg_url + "?poll_only=true"
    with Queue(url, poll_interval=0.2) as q, Queue(url) as producer, \
            psycopg.connect(pg_url, autocommit=True) as c:
        assert q.describe()["signal"] == "poll"
        c.execute("LISTEN jobq")
        w = q.watch()
        try:
            assert _quiet(w)
            producer.enqueue("k")
            assert w.wait(2.0)
            assert list(c.notifies(timeout=0.3)) == []
        finally:
            w.close()


def _quiet(w) -> bool:
    """A 0.3 s window (three polls) with no change seen, within ten tries. The snapshot is
    the whole server's: a transaction elsewhere on it (autovacuum's ANALYZE, another
    test's database dropped) moves it too, once in a while. A poll that wrote would move
    it in every window."""
    return any(not w.wait(0.3) for _ in range(10))


def test_the_poll_writes_nothing_and_sees_a_completion(pg_url, producer):
    producer.enqueue("k")
    with Queue(pg_url, read_only=True, poll_interval=0.1) as monitor:
        w = monitor.watch()
        try:
            assert _quiet(w)
            job = producer.claim("w")
            assert w.wait(2.0)
            producer.complete(job.id, job.token)  # completions send no notification
            assert w.wait(2.0)
            assert _quiet(w)
        finally:
            w.close()


def test_wake_interrupts_a_wait(pg_queue):
    w = pg_queue.watch()
    try:
        w.wait(0)
        _after(0.1, w.wake)
        started = time.monotonic()
        assert w.wait(10)
        assert time.monotonic() - started < 2
    finally:
        w.close()


def test_a_notification_held_back_is_sent_when_the_queue_closes(pg_url, monkeypatch):
    monkeypatch.setattr(Notifier, "EVERY", 30.0)  # the trailing one would come far too late
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute("LISTEN jobq")
        with Queue(pg_url) as producer:
            producer.enqueue("k", queue="a")
            producer.enqueue("k", queue="a")  # held back
            assert len(list(c.notifies(timeout=0.3))) == 1
        assert [n.payload for n in c.notifies(timeout=1.0)] == ["a"]


def test_a_watch_made_while_new_connections_fail_listens_once_they_work_again(
        pg_url, producer, jobq_log):
    # A worker whose link blips as it starts: its store has connected, then its own end of
    # the link goes down, so the watch's LISTEN connection fails at once.
    parts = urlsplit(pg_url)
    relay = Relay("127.0.0.1", (parts.hostname or "127.0.0.1", parts.port or 5432))
    try:
        with Queue(relay.url(pg_url), poll_interval=30.0) as q:
            q.check()  # connected on first use
            relay.refusing = True
            w = q.watch()
            try:
                assert not w.wait(0.5)  # it retries meanwhile, and fails each time
                relay.refusing = False
                wait_for(lambda: w.wait(0.1), timeout=10)  # listening again: look once
                _after(0.2, lambda: producer.enqueue("k")).join()
                started = time.monotonic()
                assert w.wait(10)
                assert time.monotonic() - started < 1.0  # the poll is 30 s away
            finally:
                w.close()
    finally:
        relay.close()
    messages = [r.getMessage() for r in jobq_log.records if r.name.startswith("jobq")]
    assert len([m for m in messages if "cannot open the LISTEN connection" in m]) == 1, messages
    assert len([m for m in messages if "listening again" in m]) == 1, messages
