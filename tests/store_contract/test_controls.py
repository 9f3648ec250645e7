"""Queue controls, enforced by the claim statement: pause, concurrency and rate limits.
Each test also opens a second Queue (another connection, as another process would)."""
from __future__ import annotations

import threading
import time

import pytest

from jobq_core import Rate
from jobq_core.store import controls


@pytest.fixture(autouse=True)
def fresh_limits(monkeypatch):
    """Every claim reads the list of limited queues again (a real worker re-reads it
    within a second): the tests then need no waits."""
    monkeypatch.setattr(controls, "TTL", 0.0)


def test_a_paused_queue_yields_nothing_while_other_queues_are_claimed(queue, open_queue):
    queue.enqueue_many([("k", 1, ), {"kind": "k", "queue": "mail"}, {"kind": "k", "queue": "mail"}])
    other = open_queue()
    other.pause("mail")
    claimed = queue.claim_many("w", 10)
    assert [j.queue for j in claimed] == ["default"]
    assert queue.claim_many("w", 10, queues=["mail"]) == []
    assert queue.claim_many("w", 10, queues=["mail", "default"]) == []
    assert queue.stats().queues["mail"].paused and queue.stats().queues["mail"].pending == 2


def test_enqueue_still_works_on_a_paused_queue_and_resume_lets_its_jobs_run(queue):
    queue.pause("mail")
    job_id = queue.enqueue("k", queue="mail")
    assert queue.claim("w") is None
    queue.resume("mail")
    assert queue.claim("w").id == job_id
    assert "mail" not in queue.queues() or not queue.queues()["mail"].paused


def test_pausing_leaves_running_jobs_to_finish(queue):
    queue.enqueue("k", queue="mail")
    job = queue.claim("w")
    queue.pause("mail")
    queue.complete(job.id, job.token, "ok")
    assert queue.get(job.id).status == "succeeded"


def test_a_queue_without_controls_has_no_row_and_controls_show_in_queues(queue):
    queue.pause("a")
    queue.set_limit("b", concurrency=3, rate="5/s")
    queues = queue.queues()
    assert queues["a"].paused and not queues["a"].limited
    assert (queues["b"].concurrency, queues["b"].rate, queues["b"].paused) == (3, Rate(5, 1.0), False)
    queue.resume("a")
    queue.set_limit("b")
    assert queue.store.queue_controls() == {}
    assert queue.queues() == {}


@pytest.mark.parametrize("named", [False, True])
def test_a_concurrency_limit_caps_running_jobs_of_its_queue_across_claims(queue, open_queue,
                                                                         named):
    queue.enqueue_many([{"kind": "k", "queue": "api"} for _ in range(6)]
                       + [{"kind": "k", "queue": "other"} for _ in range(3)])
    open_queue().set_limit("api", concurrency=2)
    queues = ["api", "other"] if named else None
    first = queue.claim_many("w1", 4, queues=queues)
    assert sorted(j.queue for j in first) == ["api", "api", "other", "other"]
    second = open_queue().claim_many("w2", 4, queues=queues)
    assert [j.queue for j in second] == ["other"]  # api is full: other queues still flow
    done = next(j for j in first if j.queue == "api")
    queue.complete(done.id, done.token)
    assert [j.queue for j in queue.claim_many("w1", 4, queues=queues)] == ["api"]


def test_a_rate_limit_allows_that_many_starts_per_window_then_the_next_window(queue, clock):
    queue.enqueue_many([{"kind": "k", "queue": "api"} for _ in range(12)])
    queue.set_limit("api", rate="5/s")
    assert len(queue.claim_many("w", 10)) == 5
    assert queue.claim_many("w", 10, queues=["api"]) == []
    clock.advance(0.5)
    assert queue.claim_many("w", 10) == []
    clock.advance(0.5)
    assert len(queue.claim_many("w", 3)) == 3
    assert len(queue.claim_many("w", 3, queues=["api"])) == 2  # 5 in this window
    queue.set_limit("api", rate="5/s")  # the same window length: no fresh burst
    assert queue.claim_many("w", 3) == []


def test_limits_hold_inside_complete_and_claim(queue):
    queue.enqueue_many([{"kind": "k", "queue": "api"} for _ in range(4)])
    queue.set_limit("api", concurrency=1)
    [job] = queue.claim_many("w", 4)
    accepted, jobs = queue.complete_and_claim([(job.id, job.token, None)], "w", 4)
    assert accepted == [True] and len(jobs) == 1
    accepted, jobs = queue.complete_and_claim([], "w", 4)
    assert jobs == []


def test_concurrent_claimers_never_exceed_a_concurrency_limit(queue, open_queue):
    queue.enqueue_many([{"kind": "k", "queue": "api", "payload": i} for i in range(60)])
    queue.set_limit("api", concurrency=3)
    queues = [open_queue() for _ in range(4)]
    running_max = []
    lock = threading.Lock()
    errors = []

    def claimer(q, name):
        try:
            for _ in range(40):
                jobs = q.claim_many(name, 2)
                with lock:
                    running_max.append(queue.count("running"))
                for j in jobs:
                    q.complete(j.id, j.token)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=claimer, args=(q, f"w{i}")) for i, q in enumerate(queues)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert max(running_max) <= 3
    assert queue.count("succeeded") > 0


def test_bad_limits_are_refused_naming_the_value(queue):
    with pytest.raises(ValueError, match="concurrency"):
        queue.set_limit("q", concurrency=0)
    with pytest.raises(ValueError, match="5/x"):
        queue.set_limit("q", rate="5/x")
    with pytest.raises(ValueError, match="queue"):
        queue.pause("")
    assert queue.queues() == {}


@pytest.mark.parametrize("named", [False, True])
def test_a_store_that_has_not_seen_a_new_limit_yet_never_overruns_it(queue, open_queue,
                                                                     monkeypatch, named):
    monkeypatch.setattr(controls, "TTL", 3600.0)
    queue.enqueue_many([{"kind": "k", "queue": "api"} for _ in range(4)])
    assert queue.claim_many("w", 1, queues=["nothing"]) == []  # reads the (empty) controls
    open_queue().set_limit("api", concurrency=1)
    claimed = queue.claim_many("w", 4, queues=["api"] if named else None)
    assert len(claimed) <= 1
    assert queue.count("running", queue="api") <= 1


def test_jobs_enqueued_into_an_idle_limited_queue_are_claimed_without_waiting_for_the_ttl(
        queue, open_queue, monkeypatch):
    # the first payment after a quiet night: a claim on every queue that found too little
    # reads the controls again after RECHECK, not after TTL
    monkeypatch.setattr(controls, "TTL", 3600.0)
    monkeypatch.setattr(controls, "RECHECK", 0.02)
    queue.set_limit("pay", rate="100/s", concurrency=2)
    queue.enqueue("k", queue="other")
    assert [j.queue for j in queue.claim_many("w", 4)] == ["other"]  # short: 1 of 4
    open_queue().enqueue_many([{"kind": "k", "queue": "pay"} for _ in range(3)])
    time.sleep(0.03)
    claimed = queue.claim_many("w", 4)
    assert [j.queue for j in claimed] == ["pay", "pay"]  # its concurrency limit holds
    assert queue.claim_many("w", 4) == []


def test_a_claim_that_finds_enough_does_not_read_the_controls_again(queue, open_queue,
                                                                   monkeypatch):
    monkeypatch.setattr(controls, "TTL", 3600.0)
    monkeypatch.setattr(controls, "RECHECK", 0.0)
    queue.set_limit("pay", concurrency=5)
    queue.enqueue_many([{"kind": "k"} for _ in range(4)])
    assert len(queue.claim_many("w", 2)) == 2  # found all it asked for
    open_queue().enqueue("k", queue="pay")
    # the state read before the first claim still stands: "pay" is left out
    assert [j.queue for j in queue.claim_many("w", 4)] == ["default", "default"]
    # that claim was short: the next one reads again and finds "pay"
    assert [j.queue for j in queue.claim_many("w", 4)] == ["pay"]
