"""The Worker in-process, on every store: handlers, context, failures, timeouts,
lost leases, cancellation, shutdown, idle latency."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest
from stores import AppDB

from jobq_core import Backoff, LeaseLost, Queue, Registry, Worker
from jobq_core.testing import FakeClock, wait_for
from jobq_core.worker.threads import ThreadPool

from .conftest import start

QUICK = Backoff(base=0.01, cap=0.01)


def burst(db, registry, **kwargs) -> Worker:
    with Queue(db) as q:
        w = Worker(q, registry, **kwargs)
        w.run(burst=True, handle_signals=False)
    return w


def test_a_worker_in_burst_mode_runs_every_ready_job_stores_results_and_exits(db, producer):
    r = Registry()

    @r.task("add")
    def add(p):
        return p["a"] + p["b"]

    ids = producer.enqueue_many([("add", {"a": i, "b": 1}) for i in range(20)])
    w = burst(db, r, concurrency=4)
    assert [producer.get(i).result for i in ids] == [i + 1 for i in range(20)]
    assert {producer.get(i).status for i in ids} == {"succeeded"}
    assert w.counts["succeeded"] == 20
    assert producer.workers() == []  # deregistered


def test_a_handler_with_a_second_parameter_receives_the_job_context(db, producer):
    r = Registry()
    seen = {}

    @r.task("ctx")
    def handler(payload, ctx):
        seen.update(job_id=ctx.job_id, attempt=ctx.attempt, worker=ctx.worker_id)
        ctx.heartbeat()
        ctx.progress(0.5, "halfway")
        return "ok"

    job_id = producer.enqueue("ctx")
    w = burst(db, r, worker_id="w-ctx")
    assert seen == {"job_id": job_id, "attempt": 1, "worker": "w-ctx"}
    assert w.counts["succeeded"] == 1


def test_progress_is_stored_while_the_job_runs(db, producer):
    r = Registry()
    go = threading.Event()

    @r.task("slow")
    def slow(payload, ctx):
        ctx.progress(0.25, "step 1 of 4")
        go.wait(5)

    job_id = producer.enqueue("slow")
    w = Worker(Queue(db), r)
    t = start(w)
    job = wait_for(lambda: (j := producer.get(job_id)).progress is not None and j)
    assert (job.progress, job.progress_message) == (0.25, "step 1 of 4")
    go.set()
    w.stop()
    t.join(5)


def test_async_handlers_run_on_one_event_loop_thread(db, producer):
    r = Registry()
    threads = set()

    @r.task("aio")
    async def aio(payload):
        threads.add(threading.current_thread().name)
        await asyncio.sleep(0.05)
        return payload * 2

    ids = producer.enqueue_many([("aio", i) for i in range(8)])
    started = time.monotonic()
    burst(db, r, concurrency=8)
    assert time.monotonic() - started < 1.0  # they ran concurrently, not one by one
    assert [producer.get(i).result for i in ids] == [i * 2 for i in range(8)]
    assert len(threads) == 1


def test_a_raising_handler_is_retried_then_dead_with_its_traceback_stored(db, producer):
    r = Registry()
    calls = []

    @r.task("boom", backoff=QUICK)
    def boom(payload):
        calls.append(1)
        raise ValueError("the answer is not 42")

    job_id = producer.enqueue("boom", max_attempts=3)
    w = Worker(Queue(db), r, poll_interval=0.005, idle_claim_interval=0.02)
    t = start(w)
    job = wait_for(lambda: (j := producer.get(job_id)).status == "dead" and j)
    w.stop()
    t.join(5)
    assert job.attempts == 3 and len(calls) == 3
    assert "Traceback" in job.error and "ValueError: the answer is not 42" in job.error
    assert [a.outcome for a in producer.attempts(job_id)] == ["failed"] * 3


def test_a_kinds_own_max_attempts_caps_the_jobs_allowance(db, producer):
    r = Registry()

    @r.task("fragile", max_attempts=1)
    def fragile(payload):
        raise RuntimeError("no")

    job_id = producer.enqueue("fragile", max_attempts=10)
    burst(db, r)
    job = producer.get(job_id)
    assert job.status == "dead" and job.attempts == 1


def test_a_kind_without_a_handler_fails_with_a_clear_message_and_the_worker_goes_on(db, producer):
    r = Registry()

    @r.task("known")
    def known(payload):
        return "fine"

    unknown = producer.enqueue("mystery", max_attempts=1)
    good = producer.enqueue("known")
    burst(db, r)
    assert producer.get(unknown).status == "dead"
    assert "no handler for kind 'mystery'" in producer.get(unknown).error
    assert producer.get(good).status == "succeeded"


def test_a_result_that_is_not_json_fails_the_attempt(db, producer):
    r = Registry()

    @r.task("bad")
    def bad(payload):
        return {1, 2}

    job_id = producer.enqueue("bad", max_attempts=1)
    burst(db, r)
    job = producer.get(job_id)
    assert job.status == "dead" and "not JSON-serializable" in job.error


def test_a_handler_past_its_timeout_is_failed_and_its_slot_given_up(db, producer):
    r = Registry()
    release = threading.Event()

    @r.task("stuck", timeout=0.1)
    def stuck(payload, ctx):
        release.wait(5)
        return "too late"

    @r.task("quick")
    def quick(payload):
        return "done"

    stuck_id = producer.enqueue("stuck", max_attempts=1)
    quick_id = producer.enqueue("quick", priority=-1)
    w = Worker(Queue(db), r, concurrency=1)
    t = start(w)
    wait_for(lambda: producer.get(quick_id).status == "succeeded")  # the slot was freed
    release.set()
    w.stop()
    t.join(5)
    job = producer.get(stuck_id)
    assert job.status == "dead" and "timed out after 0.1s" in job.error


def test_a_handler_whose_heartbeat_finds_the_lease_lost_is_told_to_stop_and_its_result_discarded(
        db):
    clock = FakeClock(time.time())
    r = Registry()
    entered, proceed, outcome = threading.Event(), threading.Event(), {}

    @r.task("long")
    def long(payload, ctx):
        entered.set()
        proceed.wait(5)
        try:
            ctx.heartbeat()
        except LeaseLost:
            outcome["cancelled"] = ctx.cancelled.is_set()
            raise
        return "zombie result"

    admin = Queue(db, clock=clock, backoff=Backoff(base=0.001, cap=0.001))
    job_id = admin.enqueue("long")
    # Its own heartbeat is 100 s away (a third of the lease, real time), however slowly a
    # loaded machine runs the test; one slot, busy with this job, so the worker cannot
    # claim the job back itself once it is reaped (with free slots it sometimes did).
    w = Worker(Queue(db, clock=clock), r, lease=300.0, concurrency=1)
    t = start(w)
    assert entered.wait(5)
    clock.advance(301)  # the lease ran out: reap and let someone else take it
    assert admin.reap() == 1
    clock.advance(1)
    other = admin.claim("other-worker")
    assert other.id == job_id and other.attempts == 2
    proceed.set()
    wait_for(lambda: w.counts["lost"] == 1)
    admin.complete(other.id, other.token, "second result")
    w.stop()
    t.join(5)
    assert outcome == {"cancelled": True}
    assert admin.get(job_id).result == "second result"


def test_cancelling_a_running_job_sets_its_cancelled_event_and_it_ends_cancelled(db, producer):
    r = Registry()
    entered = threading.Event()

    @r.task("cancellable")
    def cancellable(payload, ctx):
        entered.set()
        if ctx.cancelled.wait(5):
            raise RuntimeError("stopped on request")
        return "finished anyway"

    job_id = producer.enqueue("cancellable")
    w = Worker(Queue(db), r, lease=0.3)  # heartbeat every 0.1 s
    t = start(w)
    assert entered.wait(5)
    assert producer.cancel(job_id) == "running"
    job = wait_for(lambda: (j := producer.get(job_id)).status == "cancelled" and j)
    w.stop()
    t.join(5)
    assert job.finished_at is not None


def test_stop_lets_a_running_job_finish_within_the_grace_period(db, producer):
    r = Registry()
    entered = threading.Event()

    @r.task("work")
    def work(payload):
        entered.set()
        time.sleep(0.3)
        return "done"

    job_id = producer.enqueue("work")
    w = Worker(Queue(db), r, grace=5.0)
    t = start(w)
    assert entered.wait(5)
    w.stop()
    t.join(5)
    assert not t.is_alive()
    assert producer.get(job_id).status == "succeeded"


def test_stop_releases_a_job_still_running_after_the_grace_period_without_counting_it(db, producer):
    r = Registry()
    entered, seen_cancel = threading.Event(), threading.Event()

    @r.task("endless")
    def endless(payload, ctx):
        entered.set()
        if ctx.cancelled.wait(5):
            seen_cancel.set()

    job_id = producer.enqueue("endless")
    w = Worker(Queue(db), r, grace=0.1)
    t = start(w)
    assert entered.wait(5)
    w.stop()
    t.join(5)
    job = producer.get(job_id)
    assert (job.status, job.attempts) == ("pending", 0)
    assert producer.attempts(job_id)[-1].outcome == "released"
    assert seen_cancel.wait(2)


@pytest.mark.slow  # the real clock, and bounds a loaded machine must meet
def test_an_idle_worker_starts_a_job_enqueued_by_another_queue_object_within_50ms(db, producer):
    r = Registry()
    started = {}

    @r.task("ping")
    def ping(payload):
        started[payload] = time.time()

    # No periodic look for work for 30 s: only the change signal can wake it in time.
    w = Worker(Queue(db), r, idle_claim_interval=30.0)
    t = start(w)
    time.sleep(0.3)  # idle: its first claim found nothing
    latencies = []
    for i in range(20):
        sent = time.time()
        producer.enqueue("ping", i)
        wait_for(lambda: i in started, interval=0.001)
        latencies.append(started[i] - sent)
        time.sleep(0.02)
    w.stop()
    t.join(5)
    assert sorted(latencies)[10] < 0.05, latencies
    # None but one waited for a periodic look (30 s): the commits woke the worker
    # themselves. One stall is allowed a machine running two suites at once on 2 cores.
    assert sum(latency > 2.0 for latency in latencies) <= 1, latencies


@pytest.mark.slow  # a second of the real clock, and the process's CPU time
def test_an_idle_worker_uses_little_cpu(db):
    r = Registry()
    r.task("noop")(lambda p: None)
    w = Worker(Queue(db), r)
    t = start(w)
    time.sleep(0.2)
    cpu, wall = time.process_time(), time.monotonic()
    time.sleep(1.0)
    used = (time.process_time() - cpu) / (time.monotonic() - wall)
    w.stop()
    t.join(5)
    assert used < 0.1, f"idle worker used {used:.0%} of a core"


def test_a_job_with_a_longer_task_lease_gets_that_lease_right_after_the_claim(db, producer):
    r = Registry()
    entered, go = threading.Event(), threading.Event()

    @r.task("patient", lease=120.0)
    def patient(payload):
        entered.set()
        go.wait(5)

    job_id = producer.enqueue("patient")
    w = Worker(Queue(db), r, lease=5.0)
    t = start(w)
    assert entered.wait(5)
    job = wait_for(lambda: (j := producer.get(job_id)).lease_until - time.time() > 100 and j)
    go.set()
    w.stop()
    t.join(5)
    assert job.status == "running"


def test_a_running_worker_is_registered_with_its_queues_concurrency_beat_and_lease(
        db, producer):
    r = Registry()
    r.task("noop")(lambda p: None)
    r.task("short", lease=3)(lambda p: None)  # the shortest lease sets the beat
    w = Worker(Queue(db), r, concurrency=3, queues=["mail", "media"], worker_id="w-reg",
               lease=6)
    t = start(w)
    info = wait_for(lambda: producer.workers())
    w.stop()
    t.join(5)
    assert (info[0].id, info[0].queues, info[0].concurrency) == ("w-reg", ("mail", "media"), 3)
    assert (info[0].beat_interval, info[0].lease) == (1.0, 6.0)
    assert producer.workers() == []


def test_a_worker_only_claims_from_its_queues(db, producer):
    r = Registry()
    r.task("noop")(lambda p: "ok")
    mail = producer.enqueue("noop", queue="mail")
    other = producer.enqueue("noop", queue="media")
    burst(db, r, queues=["mail"])
    assert producer.get(mail).status == "succeeded"
    assert producer.get(other).status == "pending"


@pytest.mark.parametrize("kwargs, message", [
    ({"concurrency": 0}, "concurrency must be an integer >= 1, got 0"),
    ({"lease": -1}, "lease must be > 0 seconds, got -1"),
    ({"grace": -2}, "grace must be >= 0 seconds, got -2"),
    ({"queues": []}, "queues must be None or non-empty queue names, got []"),
])
def test_a_worker_refuses_bad_configuration_naming_the_wrong_value(db, kwargs, message):
    with Queue(db) as q, pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Worker(q, Registry(), **kwargs)


def test_a_registry_refuses_a_second_handler_for_the_same_kind():
    r = Registry()
    r.task("x")(lambda p: None)
    with pytest.raises(ValueError, match="kind 'x' already has a handler"):
        r.task("x")(lambda p: None)


def test_a_registry_refuses_a_bad_timeout():
    with pytest.raises(ValueError, match="timeout must be > 0 seconds, got 0"):
        Registry().task("x", timeout=0)


def test_a_job_whose_stored_payload_is_not_json_goes_dead_without_running(db, producer):
    r = Registry()
    calls = []
    r.task("k")(lambda p: calls.append(p))
    job_id = producer.enqueue("k", {"fine": True})
    with AppDB(db) as raw:  # another program wrote this row
        raw.execute("UPDATE jobq_jobs SET payload='{oops' WHERE id=?", (job_id,))
        raw.commit()
    burst(db, r)
    job = producer.get(job_id)
    assert (job.status, job.attempts, calls) == ("dead", 1, [])
    assert "not valid JSON" in job.error


def test_an_async_handler_past_its_timeout_is_cancelled_and_failed(db, producer):
    r = Registry()
    started, cancelled = threading.Event(), threading.Event()

    # 0.5 s: long enough for a loaded machine to start the coroutine (one cancelled
    # before its first step never runs its body, so there would be nothing to see).
    @r.task("hang", timeout=0.5)
    async def hang(payload):
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    job_id = producer.enqueue("hang", max_attempts=1)
    burst(db, r)
    assert "timed out after 0.5s" in producer.get(job_id).error
    assert started.is_set()
    assert cancelled.wait(2)


def test_the_event_loop_stops_only_after_its_tasks_saw_their_cancellation():
    """Closing the pool while a cancellation is still queued on the loop delivers it:
    the coroutine's ``finally`` runs (a bare ``loop.stop()`` would end the loop first)."""
    pool = ThreadPool(1)
    started, finished = threading.Event(), threading.Event()

    async def hang():
        started.set()
        try:
            await asyncio.sleep(10)
        finally:
            finished.set()

    loop = pool._event_loop()
    future = asyncio.run_coroutine_threadsafe(hang(), loop)
    assert started.wait(5)
    future.cancel()  # queues task.cancel() on the loop ...
    pool.close()     # ... and the wind-down right behind it
    assert finished.wait(5)


def test_a_forgotten_worker_that_is_alive_registers_again_at_its_next_beat(db, producer):
    r = Registry()
    r.task("noop")(lambda p: None)
    w = Worker(Queue(db), r, worker_id="w-back", lease=1.5)  # beats every 0.5 s
    t = start(w)
    first = wait_for(lambda: producer.workers())
    assert producer.forget_workers(first) == 1  # an operator forgot it (or it froze)
    again = wait_for(lambda: producer.workers(), timeout=5)
    w.stop()
    t.join(5)
    assert [(i.id, i.beat_interval) for i in again] == [("w-back", 0.5)]


def test_a_tasks_attempt_limit_is_stored_on_its_jobs_so_everyone_shows_and_applies_it(
        db, producer):
    r = Registry()

    @r.task("flaky", max_attempts=3, backoff=QUICK)
    def flaky(p):
        raise RuntimeError("no")

    job_id = producer.enqueue("flaky")  # the queue's default: 20 attempts
    burst(db, r)
    assert producer.get(job_id).max_attempts == 3  # from its first claim: TRY 1/3
    for _ in range(10):
        time.sleep(0.02)  # the backoff
        burst(db, r)
    job = producer.get(job_id)
    assert (job.status, job.attempts, job.max_attempts) == ("dead", 3, 3)  # TRY 3/3, not 3/20


def test_a_stop_whose_wake_up_an_idle_look_took_still_ends_the_worker_at_once(db):
    # stop() wakes the claim loop once. When its wake-up lands in the loop's zero-timeout
    # look for changes (between its check of stopping and its long idle sleep), the loop
    # must still see the stop instead of sleeping out idle_claim_interval
    w = Worker(Queue(db), Registry(), idle_claim_interval=30.0)
    watch = w._claimer._watch
    looks = watch.wait
    armed = threading.Event()

    def look(timeout):
        if timeout == 0 and armed.is_set():
            armed.clear()
            w.stop()  # as if from another thread, just before this look
        return looks(timeout)

    watch.wait = look
    t = start(w)
    time.sleep(0.3)  # idle, in its long sleep
    armed.set()
    watch.wake()  # one turn of the loop: its next zero-timeout look meets the stop
    t.join(5)
    assert not t.is_alive()
