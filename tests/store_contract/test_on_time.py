"""Timers, on every store: an idle worker starts a delayed job and a retry when they
become ready, not at its next periodic look for work (10 s here, and PostgreSQL's change
poll 30 s)."""
from __future__ import annotations

import threading
import time

import pytest

from jobq_core import Backoff, Queue, Registry, Worker
from jobq_core.testing import wait_for


class Fixed(Backoff):
    """Every retry after exactly ``base`` seconds (the real one draws up to it)."""

    def delay(self, attempt: int) -> float:
        return self.base


LOOK_EVERY = 10.0  # the worker's idle_claim_interval: what a job would wait without a timer


def _worker(database, adapter, registry) -> tuple[Worker, threading.Thread]:
    # a store's own change poll would also end the wait: move it out of the way
    w = Worker(Queue(database, **adapter.slow_change_poll), registry,
               idle_claim_interval=LOOK_EVERY)
    t = threading.Thread(target=lambda: w.run(handle_signals=False), daemon=True)
    t.start()
    return w, t


@pytest.mark.slow  # seconds of real time (a pilot session, processes or clocks)
def test_an_idle_worker_starts_a_delayed_job_when_it_becomes_ready(database, adapter):
    r = Registry()
    started: dict[int, float] = {}
    r.task("stamp")(lambda p: started.setdefault(p, time.time()))
    with Queue(database) as producer:
        w, t = _worker(database, adapter, r)
        try:
            time.sleep(0.5)  # idle, and past its first look
            sent = time.time()
            producer.enqueue("stamp", 1, delay=0.4)
            wait_for(lambda: 1 in started, timeout=5)
            took = started[1] - sent
            assert 0.4 <= took < 0.4 + 1.0, took  # on time; never early
            # the next one, scheduled while the worker is idle with nothing else to wait for
            sent = time.time()
            producer.enqueue("stamp", 2, delay=1.2)
            wait_for(lambda: 2 in started, timeout=5)
            assert 1.2 <= started[2] - sent < 1.2 + 1.0, started[2] - sent
        finally:
            w.stop()
            t.join(5)
        assert not t.is_alive()  # a stop ends the idle worker at once, not at its next look


def test_a_failed_job_is_retried_when_its_backoff_ends(database, adapter):
    r = Registry()
    tries: list[float] = []

    @r.task("flaky", backoff=Fixed(base=0.6))
    def flaky(p):
        tries.append(time.time())
        if len(tries) == 1:
            raise RuntimeError("first try fails")

    with Queue(database) as producer:
        w, t = _worker(database, adapter, r)
        try:
            job_id = producer.enqueue("flaky")
            wait_for(lambda: producer.get(job_id).status == "succeeded", timeout=8)
            gap = tries[1] - tries[0]
            assert 0.6 <= gap < 0.6 + 1.0, gap
        finally:
            w.stop()
            t.join(5)
        assert not t.is_alive()  # a stop ends the idle worker at once, not at its next look
