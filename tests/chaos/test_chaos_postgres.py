"""Fault injection on PostgreSQL, with real worker processes and the same checker: nothing
lost, at most one accepted completion per job and it carries the final token, attempts
within bounds, no claim while an earlier lease was live.

Faults: workers SIGKILLed at random; a SIGSTOPped worker whose job is taken over and that
wakes up later; every jobq connection killed with pg_terminate_backend twice mid-drain;
the server restarted mid-drain (the tests' own throwaway cluster only); workers whose host
clocks are an hour off (leases are judged by the server's clock, so even the live-lease
check holds).
"""
from __future__ import annotations

import random
import signal
import time

import psycopg
import pytest

from jobq_core import Queue

import pgserver

pytestmark = pytest.mark.slow  # worker processes, killed connections, a restart: seconds each


def _finish(chaos, timeout=90.0):
    chaos.wait_for(lambda: chaos.unfinished() == 0, timeout, "every job to reach a final state")


def _stop(chaos, *workers):
    chaos.stop(*workers, timeout=60)


def _claims(chaos, job_id=None):
    return [e for e in chaos.events()
            if e["ev"] == "claimed" and (job_id is None or e["job"] == job_id)]


def _kill_connections(url) -> int:
    db = url.rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as c:
        return c.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                         "WHERE datname=%s AND application_name='jobq'", (db,)).fetchone()[0]


def _done(chaos) -> int:
    return sum(1 for e in chaos.events() if e["ev"] == "accepted")


def _has_claimed(chaos, worker) -> bool:
    return any(e["ev"] == "claimed" and e["pid"] == worker.pid for e in chaos.events())


def test_workers_sigkilled_at_random_lose_nothing_on_postgresql(pg_chaos):
    chaos, rng = pg_chaos, random.Random(2)
    chaos.enqueue([{"kind": "work", "payload": {"ms": rng.randint(5, 60)}} for _ in range(600)])
    opts = ("--concurrency", "4", "--lease", "1")
    workers = [chaos.worker(*opts) for _ in range(3)]
    for _ in range(6):
        time.sleep(rng.uniform(0.3, 0.6))
        i = rng.randrange(len(workers))
        # Kill a worker that holds jobs (on a loaded machine one may still be starting).
        chaos.wait_for(lambda: _has_claimed(chaos, workers[i]) or not chaos.unfinished(),
                       20, "the worker's first claim")
        chaos.kill(workers[i])
        workers[i].wait()
        workers[i] = chaos.worker(*opts)
    _finish(chaos)
    _stop(chaos, *workers)
    report = chaos.check()
    assert not report.violations, report
    assert report.reruns > 0  # the kills hit running jobs


def test_a_resumed_zombie_cannot_complete_a_job_taken_over_on_postgresql(pg_chaos):
    chaos = pg_chaos
    (job_id,) = chaos.enqueue([("work", {"ms": 1500})])
    zombie = chaos.worker("--concurrency", "1", "--lease", "0.6")
    chaos.wait_for(lambda: len(_claims(chaos, job_id)) == 1, 30, "the first claim")
    chaos.kill(zombie, signal.SIGSTOP)
    owner = chaos.worker("--concurrency", "1", "--lease", "0.6")
    chaos.wait_for(lambda: len(_claims(chaos, job_id)) == 2, 30, "the takeover")
    _finish(chaos)
    chaos.kill(zombie, signal.SIGCONT)
    time.sleep(2.0)  # the zombie's handler ends; its completion must be fenced out
    _stop(chaos, zombie, owner)
    first, second = _claims(chaos, job_id)
    accepted = [e for e in chaos.events() if e["ev"] == "accepted" and e["job"] == job_id]
    assert [e["token"] for e in accepted] == [second["token"]]
    report = chaos.check()
    assert not report.violations, report


def test_every_connection_killed_twice_mid_drain_loses_nothing(pg_chaos, pg_url):
    chaos = pg_chaos
    chaos.enqueue([("work", {"ms": 20}) for _ in range(800)])
    workers = [chaos.worker("--concurrency", "4", "--lease", "2") for _ in range(3)]
    producer = chaos.producer(20, 20)
    for target in (150, 400):
        chaos.wait_for(lambda t=target: _done(chaos) >= t, 60, f"{target} completions")
        assert _kill_connections(pg_url) >= 3
        chaos.faults += 1
    assert producer.wait(timeout=90) == 0
    _finish(chaos)
    _stop(chaos, *workers)
    report = chaos.check()
    assert not report.violations, report
    assert report.jobs == 800 + 20 * 20


def test_a_server_restart_mid_drain_loses_nothing(pg_chaos, pg_server, pg_url):
    if not pg_server.restartable:
        pytest.skip(f"only a throwaway cluster of the tests' own can be restarted "
                    f"(the server is {pg_server.origin})")
    chaos = pg_chaos
    chaos.enqueue([("work", {"ms": 20}) for _ in range(600)])
    workers = [chaos.worker("--concurrency", "4", "--lease", "2") for _ in range(3)]
    chaos.wait_for(lambda: _done(chaos) >= 150, 60, "150 completions")
    # Every worker running first (a loaded machine starts one in seconds): one still
    # opening the store would meet a server shutting down, which fails a first open.
    with Queue(pg_url) as q:
        chaos.wait_for(lambda: {w.pid for w in q.workers()} >= {w.pid for w in workers},
                       60, "the three workers registered")
    pg_server.restart()
    chaos.faults += 1
    pgserver.wait_until_up(pg_url)
    _finish(chaos)
    _stop(chaos, *workers)
    report = chaos.check()
    assert not report.violations, report


@pytest.mark.parametrize("offset", ["3600", "-3600"])
def test_hosts_an_hour_off_share_the_servers_clock(pg_chaos, offset):
    chaos = pg_chaos
    chaos.enqueue([("work", {"ms": 30}) for _ in range(200)])
    honest = chaos.worker("--concurrency", "4", "--lease", "0.5")
    skewed = chaos.worker("--concurrency", "4", "--lease", "0.5", "--host-clock-offset", offset)
    _finish(chaos)
    _stop(chaos, honest, skewed)
    report = chaos.check()  # with the live-lease check: one clock judges every lease
    assert not report.violations, report
    assert report.reruns == 0
