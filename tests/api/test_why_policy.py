"""``why_policy.reason``: which reason applies, from facts already read, in the order of
``WHY_REASONS`` (the first that applies wins). No database: the facts are made here."""
from dataclasses import replace

import pytest

from jobq_core import WHY_REASONS, Hold, Job, JobStatus, QueueStats, Rate, WorkerInfo
from jobq_core.presentation.why_policy import deciding, key_held, rate_window_end, reason, serves

NOW = 1_000_000.0


def job(status=JobStatus.PENDING, **fields) -> Job:
    base = Job(id=7, kind="k", queue="api", payload=None, priority=0, status=status,
               attempts=0, max_attempts=3, run_at=NOW - 1, lease_until=None, worker=None,
               token=None, result=None, error=None, created_at=NOW - 60, started_at=None,
               finished_at=None)
    return replace(base, **fields)


def worker(queues=None, silent: float = 1.0) -> WorkerInfo:
    return WorkerInfo(id="w1", host="h", pid=1, queues=queues, concurrency=1,
                      started_at=NOW - 600, last_seen=NOW - silent, beat_interval=10.0)


EVERY_HOLD = QueueStats(paused=True, concurrency=2, running=2, rate=Rate(5, 60.0),
                        window_start=NOW - 10, window_count=5, key_concurrency=1)


@pytest.mark.parametrize("status", ["succeeded", "dead", "cancelled", "running", "waiting"])
def test_a_job_that_is_not_pending_is_its_state_whatever_holds_its_queue(status):
    assert reason(job(JobStatus(status), key="c7"), NOW, queue=EVERY_HOLD,
                  hold=Hold(key_running=3), served=False) == status


def test_the_first_hold_that_applies_wins_in_the_order_of_why_reasons():
    """Lifting each hold in turn shows the next one: the order is WHY_REASONS'."""
    facts = dict(j=job(key="c7", run_at=NOW + 30, attempts=1), queue=EVERY_HOLD,
                 hold=Hold(key_running=1), served=False)
    lifts = [("j", lambda j: replace(j, run_at=NOW)),
             ("queue", lambda q: replace(q, paused=False)),
             ("queue", lambda q: replace(q, running=1)),
             ("queue", lambda q: replace(q, window_count=4)),
             ("queue", lambda q: replace(q, key_concurrency=None)),
             ("served", lambda served: True)]
    seen = []
    for fact, lift in [*lifts, (None, None)]:
        seen.append(reason(facts["j"], NOW, queue=facts["queue"], hold=facts["hold"],
                           served=facts["served"]))
        if fact is not None:
            facts[fact] = lift(facts[fact])
    assert seen == ["retry", "paused", "queue_limit", "rate_limit", "key_held", "no_worker",
                    "ready"]
    assert [r for r in WHY_REASONS if r in seen] == seen
    assert reason(job(run_at=NOW + 30), NOW, served=False) == "scheduled"  # no attempt yet


def test_a_queue_without_controls_holds_nothing():
    assert reason(job(), NOW, queue=None) == reason(job(), NOW, queue=QueueStats()) == "ready"


def test_a_rate_window_holds_only_while_it_is_open_and_full():
    full = QueueStats(rate=Rate(5, 60.0), window_start=NOW - 10, window_count=5)
    assert rate_window_end(full, NOW) == NOW + 50
    assert rate_window_end(replace(full, window_count=4), NOW) is None
    assert rate_window_end(full, NOW + 50) is None  # the window is over: a new one opens
    assert rate_window_end(replace(full, window_start=None), NOW) is None


@pytest.mark.parametrize("queue, hold, held", [
    (QueueStats(key_concurrency=2), Hold(key_running=2), True),
    (QueueStats(key_concurrency=2), Hold(key_running=1, key_earlier=3), False),
    (QueueStats(ordered=True), Hold(key_running=0, key_earlier=3), True),
    (QueueStats(ordered=True), Hold(key_running=1), True),
    (QueueStats(ordered=True), Hold(), False),
    (QueueStats(), Hold(key_running=9, key_earlier=3), False),  # no key limit
    (QueueStats(key_concurrency=1), None, False),  # not read: taken as free
])
def test_a_key_is_held_by_its_running_jobs_or_in_an_ordered_queue_an_earlier_one(
        queue, hold, held):
    assert key_held(job(key="c7"), queue, hold) is held
    assert key_held(job(key=None), queue, hold) is False  # a job without a key: never
    assert (reason(job(key="c7"), NOW, queue=queue, hold=hold) == "key_held") is held


def test_a_queue_is_served_by_a_worker_that_is_not_lost_and_claims_from_it():
    assert serves([worker()], "api", NOW, 10.0)
    assert serves([worker(("api", "mail"))], "api", NOW, 10.0)
    assert not serves([worker(("mail",))], "api", NOW, 10.0)
    assert not serves([worker(silent=3600)], "api", NOW, 10.0)  # lost
    assert serves([worker(silent=20)], "api", NOW, 10.0)  # late, not lost
    assert not serves([], "api", NOW, 10.0)


def test_the_facts_a_queue_decides_by_read_the_same_while_only_its_counts_move():
    busy = QueueStats(pending=10, running=3, dead=2, oldest_pending_at=NOW - 5, keys_busy=2,
                      key_concurrency=1)
    busier = replace(busy, pending=50, running=8, dead=3, oldest_pending_at=NOW - 9)
    assert deciding(busy) == deciding(busier)
    limited = replace(busy, concurrency=8)
    assert deciding(limited) != deciding(replace(limited, running=8))  # under a limit: it counts
    assert deciding(None) is None
    for q in (busy, busier, limited, EVERY_HOLD):
        assert reason(job(key="c7"), NOW, queue=deciding(q), hold=Hold(key_running=1)) == \
            reason(job(key="c7"), NOW, queue=q, hold=Hold(key_running=1))
