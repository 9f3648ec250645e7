"""Several hosts on one PostgreSQL queue: workers in network namespaces of their own
(``netns.py``: a veth pair each and a TCP relay to the server on loopback), checked by the
chaos checker.

A host cut off mid-job (its link taken down, nothing closed) loses its lease; a worker on
another host takes the job over and finishes it; when the link comes back, the first
worker's connections resume and its late completion is fenced out. A host whose link
flaps during a drain (once silently; once with its own end down, so that its new
connections fail at once) loses nothing either.

These need root and ``ip netns``; elsewhere they skip, saying why.
"""
from __future__ import annotations

import signal
import time
from urllib.parse import urlsplit

import pytest

import netns

pytestmark = pytest.mark.slow  # hosts cut off past their leases on the real clock: seconds each


@pytest.fixture(scope="module")
def netns_allowed():
    why = netns.available()
    if why:
        pytest.skip(f"several hosts need network namespaces: {why}")


@pytest.fixture
def hosts(netns_allowed, pg_url):
    parts = urlsplit(pg_url)
    made: list[netns.Host] = []

    def make() -> netns.Host:
        made.append(netns.Host(len(made), (parts.hostname or "127.0.0.1", parts.port or 5432)))
        return made[-1]

    yield make
    for host in made:
        host.remove()


def _events(chaos, ev, job_id=None):
    return [e for e in chaos.events() if e["ev"] == ev and (job_id is None or e["job"] == job_id)]


def _stop(*workers):
    for w in workers:
        if w.poll() is None:
            w.send_signal(signal.SIGTERM)
    for w in workers:
        assert w.wait(timeout=60) == 0


def test_a_host_cut_off_mid_job_is_fenced_when_its_link_returns(pg_chaos, hosts):
    chaos = pg_chaos
    a, b = hosts(), hosts()
    (job_id,) = chaos.enqueue([("work", {"ms": 2500})])
    cut_off = chaos.worker("--concurrency", "1", "--lease", "1", host=a)
    chaos.wait_for(lambda: _events(chaos, "claimed", job_id), 30, "host a's claim")
    a.cut()
    chaos.faults += 1
    cut_at = time.monotonic()
    other = chaos.worker("--concurrency", "1", "--lease", "1", host=b)
    chaos.wait_for(lambda: _events(chaos, "accepted", job_id), 60,
                   "host b to take the job over and finish it")
    first, second = _events(chaos, "claimed", job_id)[:2]
    assert first["pid"] == cut_off.pid and second["pid"] == other.pid
    assert cut_off.poll() is None  # cut off, not dead: its calls are stuck in the network
    assert not _events(chaos, "rejected", job_id)
    a.mend()
    # Its connections resume: the completion it has been trying to send since its handler
    # ended is refused (the job is another claim's now).
    chaos.wait_for(lambda: _events(chaos, "rejected", job_id), 60,
                   "host a's late completion to be fenced out")
    [rejected] = _events(chaos, "rejected", job_id)
    assert rejected["token"] == first["token"] and rejected["pid"] == cut_off.pid
    assert [e["token"] for e in _events(chaos, "accepted", job_id)] == [second["token"]]
    assert time.monotonic() - cut_at > 2.5  # the job was taken over while a was cut off
    _stop(cut_off, other)
    report = chaos.check()
    assert not report.violations, report


def test_a_host_whose_link_flaps_during_a_drain_loses_nothing(pg_chaos, hosts):
    chaos = pg_chaos
    a, b = hosts(), hosts()
    # 200 ms jobs: host a always holds running jobs when its link goes, however loaded
    chaos.enqueue([("work", {"ms": 200}) for _ in range(300)])
    workers = [chaos.worker("--concurrency", "4", "--lease", "1", host=h) for h in (a, b)]
    # The flaps come once a is draining: on a loaded machine it may start seconds after b,
    # which alone reaches the first target in about 3 s (a worker that cannot reach its
    # database as it opens it reports that and exits 1, by design).
    chaos.wait_for(lambda: any(e["pid"] == workers[0].pid for e in _events(chaos, "claimed")),
                   60, "host a's first claim")
    # one silent cut, one with a's own end down (a connection it opens fails at once)
    for target, silent in ((60, True), (150, False)):
        chaos.wait_for(lambda t=target: len(_events(chaos, "accepted")) >= t, 90,
                       f"{target} completions")
        a.cut(silent=silent)
        chaos.faults += 1
        time.sleep(2.0)  # past a's leases: b reaps and reruns a's jobs
        a.mend()
    chaos.wait_for(lambda: chaos.unfinished() == 0, 120, "every job to reach a final state")
    _stop(*workers)  # a rode both outages out: it stops cleanly like b
    report = chaos.check()
    assert not report.violations, report
    assert report.jobs == 300
    assert report.reruns > 0  # the cuts hit running jobs
