"""Queue.wait and api.waiting.await_job on every store: the finished job (succeeded with
its result, dead with its error, cancelled), TimeoutError with the job's status, an
unknown id refused, waits from other threads and from coroutines while a real Worker runs,
and a completion through the worker's own connection seen by a wait in its process."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

from jobq_core import JobNotFound, JobqError, Queue, Worker
from jobq_core.api.waiting import await_job

from .conftest import start
from .wait_tasks import registry


@pytest.fixture
def worker(db):
    """A Worker on a queue of its own, running on a thread; stopped at the end."""
    with Queue(db) as q:
        w = Worker(q, registry, concurrency=4)
        t = start(w)
        yield w
        w.stop()
        t.join(10)


def test_wait_returns_a_succeeded_job_with_its_result(producer, worker):
    job_id = producer.enqueue("echo", [1, 2])
    job = producer.wait(job_id, timeout=10)
    assert (job.id, job.status, job.result) == (job_id, "succeeded", {"echo": [1, 2]})


def test_wait_returns_a_dead_job_with_its_error(producer, worker):
    job = producer.wait(producer.enqueue("boom", "x"), timeout=10)
    assert job.status == "dead" and "ValueError: boom x" in job.error


def test_wait_returns_a_job_cancelled_while_it_waited(producer):
    job_id = producer.enqueue("echo", delay=3600)
    threading.Timer(0.1, lambda: producer.cancel(job_id)).start()
    assert producer.wait(job_id, timeout=10).status == "cancelled"


def test_wait_on_a_finished_job_returns_it_at_once(producer):
    job_id = producer.enqueue("echo")
    producer.cancel(job_id)
    started = time.monotonic()
    assert producer.wait(job_id, timeout=0).status == "cancelled"
    assert time.monotonic() - started < 1.0


def test_wait_past_its_timeout_raises_timeout_error_saying_what_the_job_is_doing(producer):
    job_id = producer.enqueue("echo", delay=3600)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=rf"job {job_id} did not finish within 0.2s "
                                           r"\(it is pending\)"):
        producer.wait(job_id, timeout=0.2)
    assert 0.2 <= time.monotonic() - started < 5


def test_wait_for_an_unknown_id_raises_job_not_found(producer):
    with pytest.raises(JobNotFound, match="no job with id 424242"):
        producer.wait(424242, timeout=1)


@pytest.mark.parametrize("bad, error", [("7", TypeError), (-1.0, ValueError)])
def test_wait_refuses_a_bad_timeout_or_id(producer, bad, error):
    job_id = producer.enqueue("echo")
    with pytest.raises(error):
        producer.wait(job_id, timeout=bad) if bad != "7" else producer.wait(bad)


def test_waits_from_several_threads_each_get_their_job_while_a_worker_runs(producer, worker):
    ids = [producer.enqueue("nap", 0.05 * (i % 4)) for i in range(12)]
    got: dict[int, str] = {}

    def wait(job_id: int) -> None:
        got[job_id] = producer.wait(job_id, timeout=20).result

    threads = [threading.Thread(target=wait, args=(i,)) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert got == dict.fromkeys(ids, "woke")


def test_a_wait_in_the_workers_process_on_its_own_queue_sees_its_completions(db):
    """The completion commits through the very connection the wait reads on."""
    with Queue(db) as q:
        w = Worker(q, registry, concurrency=1)
        t = start(w)
        try:
            job_id = q.enqueue("echo", "same")
            assert q.wait(job_id, timeout=10).result == {"echo": "same"}
        finally:
            w.stop()
            t.join(10)


def test_await_job_returns_the_job_without_blocking_the_event_loop(producer, worker):
    async def main() -> tuple[object, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        job = await await_job(producer, producer.enqueue("nap", 0.3), 10)
        ticker.cancel()
        return job, ticks

    job, ticks = asyncio.run(main())
    assert job.status == "succeeded" and job.result == "woke"
    assert ticks >= 10  # the loop went on for the 0.3 s the job took


def test_await_job_on_dead_cancelled_timeout_and_unknown(producer, worker):
    async def main() -> None:
        dead = await await_job(producer, producer.enqueue("boom", 1), 10)
        assert dead.status == "dead"
        later = producer.enqueue("echo", delay=3600)
        asyncio.get_running_loop().call_later(0.1, producer.cancel, later)
        assert (await await_job(producer, later, 10)).status == "cancelled"
        with pytest.raises(TimeoutError, match="it is pending"):
            await await_job(producer, producer.enqueue("echo", delay=3600), 0.2)
        with pytest.raises(JobNotFound):
            await await_job(producer, 424242, 1)

    asyncio.run(main())


def test_many_coroutines_wait_at_once(producer, worker):
    ids = [producer.enqueue("echo", i) for i in range(20)]

    async def main() -> list[object]:
        return [j.result for j in await asyncio.gather(*(await_job(producer, i, 20)
                                                         for i in ids))]

    assert asyncio.run(main()) == [{"echo": i} for i in range(20)]


def test_closing_the_queue_ends_its_waiting_thread(db, worker):
    def waiting_threads() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "jobq-wait"}

    before = waiting_threads()
    q = Queue(db)
    q.wait(q.enqueue("echo", 1), timeout=10)
    mine, = waiting_threads() - before
    q.close()
    mine.join(5)
    assert not mine.is_alive()


def test_a_wait_under_way_when_its_queue_closes_raises_at_once(db):
    q = Queue(db)
    job_id = q.enqueue("echo", delay=3600)
    threading.Timer(0.2, q.close).start()
    started = time.monotonic()
    with pytest.raises(JobqError, match=f"queue was closed while waiting for job {job_id}"):
        q.wait(job_id, timeout=30)
    assert time.monotonic() - started < 5


def test_job_statuses_reads_the_status_of_each_existing_job_in_one_call(queue):
    done, waiting = queue.enqueue("echo"), queue.enqueue("echo", delay=3600)
    queue.cancel(done)
    assert queue.store.job_statuses([done, waiting, 424242]) == {
        done: "cancelled", waiting: "pending"}
    assert queue.store.job_statuses([]) == {}
