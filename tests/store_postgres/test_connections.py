"""Connections on PostgreSQL: a worker needs at most three whatever its concurrency; it
rides out connections killed under it (pg_terminate_backend) and a server restart, with
one log line per outage and no job lost, and starts while new connections fail; a forked
child opens its own; with no injected clock, times come from the server's clock."""
from __future__ import annotations

import os
import threading
import time
from urllib.parse import urlsplit

import psycopg
import pytest

import pgserver
from jobq_core import Queue, Registry, Worker
from jobq_core.testing import wait_for
from relay import Relay


def _backends(url, app="jobq"):
    db = url.rsplit("/", 1)[1].split("?")[0]
    with psycopg.connect(url, autocommit=True) as c:
        return c.execute("SELECT pid FROM pg_stat_activity WHERE datname=%s AND "
                         "application_name=%s", (db, app)).fetchall()


def _kill_all(url):
    db = url.rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as c:
        return c.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                         "datname=%s AND application_name='jobq'", (db,)).fetchone()[0]


def _slow_registry(seconds):
    r = Registry()

    @r.task("nap")
    def nap(_payload):
        time.sleep(seconds)

    return r


def _run(worker):
    t = threading.Thread(target=lambda: worker.run(handle_signals=False), daemon=True)
    t.start()
    return t


def test_a_worker_uses_at_most_three_connections_whatever_its_concurrency(pg_url):
    with Queue(pg_url) as producer:
        producer.enqueue_many([("nap", None) for _ in range(64)])
    with Queue(pg_url) as q:
        w = Worker(q, _slow_registry(0.05), concurrency=32, lease=5)
        t = _run(w)
        peak = 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and w.counts["succeeded"] < 64:
            peak = max(peak, len(_backends(pg_url)))
            time.sleep(0.01)
        w.stop()
        t.join(30)
    assert w.counts["succeeded"] == 64
    assert 2 <= peak <= 3


def _drain_through(pg_url, fault, caplog, jobs=300):
    with Queue(pg_url) as producer:
        ids = producer.enqueue_many([("nap", None) for _ in range(jobs)])
        with Queue(pg_url) as q:
            # 50 ms jobs: the drain still runs when the fault comes, however loaded the machine
            w = Worker(q, _slow_registry(0.05), concurrency=8, lease=5)
            t = _run(w)
            wait_for(lambda: w.counts["succeeded"] >= jobs // 4, timeout=60)
            fault()
            wait_for(lambda: producer.count("succeeded") == jobs, timeout=90, interval=0.1)
            w.stop()
            t.join(30)
        assert {producer.get(i).status for i in ids} == {"succeeded"}
        assert producer.count("running") == 0 and producer.count("pending") == 0
    return [r.getMessage() for r in caplog.records if r.name.startswith("jobq")]


@pytest.mark.slow
def test_a_worker_rides_out_its_connections_killed_twice(pg_url, jobq_log):
    def kill_twice():
        assert _kill_all(pg_url) >= 2
        time.sleep(0.3)
        assert _kill_all(pg_url) >= 1

    messages = _drain_through(pg_url, kill_twice, jobq_log)
    lost = [m for m in messages if "lost the connection" in m]
    assert 1 <= len(lost) <= 4  # one line per outage, for each of the two queues' stores
    # No operation failed: the outage lines themselves may quote the driver's "consuming
    # input failed", depending on where the kill found the connection.
    assert not [m for m in messages if "failed" in m and "LISTEN" not in m
                and "lost the connection" not in m], messages


@pytest.mark.slow
def test_a_worker_rides_out_a_server_restart(pg_server, pg_url, jobq_log):
    if not pg_server.restartable:
        pytest.skip(f"only a throwaway cluster of the tests' own can be restarted "
                    f"(the server is {pg_server.origin})")
    messages = _drain_through(pg_url, pg_server.restart, jobq_log)
    assert 1 <= len([m for m in messages if "lost the connection" in m]) <= 2, messages
    assert any("reconnected" in m for m in messages)
    pgserver.wait_until_up(pg_url)


def test_a_worker_made_while_new_connections_fail_starts_and_drains(pg_url, jobq_log):
    # Its store has connected; then its own end of the link goes down, so every connection
    # it opens fails at once: it is made all the same, works on the connection it has, and
    # listens once connections work again.
    parts = urlsplit(pg_url)
    relay = Relay("127.0.0.1", (parts.hostname or "127.0.0.1", parts.port or 5432))
    errors: list[BaseException] = []

    def run(worker):
        try:
            worker.run(handle_signals=False)
        except BaseException as e:  # noqa: BLE001 - the test reports it
            errors.append(e)

    try:
        with Queue(pg_url) as producer, Queue(relay.url(pg_url)) as q:
            ids = producer.enqueue_many([("nap", None) for _ in range(40)])
            assert q.count() == 40  # its store connects on first use
            relay.refusing = True
            w = Worker(q, _slow_registry(0.05), concurrency=4, lease=5)
            t = threading.Thread(target=run, args=(w,), daemon=True)
            t.start()
            wait_for(lambda: w.counts["succeeded"] >= 8, timeout=30)
            relay.refusing = False
            wait_for(lambda: producer.count("succeeded") == len(ids), timeout=60, interval=0.1)
            w.stop()
            t.join(30)
    finally:
        relay.close()
    assert not t.is_alive() and not errors, errors
    messages = [r.getMessage() for r in jobq_log.records if r.name.startswith("jobq")]
    assert len([m for m in messages if "cannot open the LISTEN connection" in m]) == 1, messages
    assert len([m for m in messages if "listening again" in m]) == 1, messages


def test_an_operation_waits_for_the_server_and_reports_after_busy_timeout(pg_url):
    with Queue(pg_url, busy_timeout=1.0) as q:
        q.enqueue("k")
        _kill_all(pg_url)
        assert q.count() == 1  # the broken connection was replaced


def test_a_forked_child_opens_its_own_connections_and_the_parent_keeps_its(pg_url):
    with Queue(pg_url) as q:
        q.enqueue("k")
        before = {p for (p,) in _backends(pg_url)}
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                q.enqueue("from-child")
                code = 0 if q.count() == 2 else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert q.count() == 2  # the parent's connections still work
        assert before <= {p for (p,) in _backends(pg_url)}


def test_without_an_injected_clock_times_come_from_the_server(pg_url, monkeypatch):
    with psycopg.connect(pg_url) as c:
        server_now = c.execute("SELECT extract(epoch FROM clock_timestamp())::float8").fetchone()[0]
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 3600)  # this host's clock is an hour off
    with Queue(pg_url) as q:
        job = q.get(q.enqueue("k"))
    assert abs(job.created_at - server_now) < 5


def test_an_injected_clock_still_rules(pg_url, clock):
    with Queue(pg_url, clock=clock) as q:
        job = q.get(q.enqueue("k"))
    assert job.created_at == clock.now()
