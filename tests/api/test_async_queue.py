"""AsyncQueue: Queue's producer and reader API as coroutines, on both stores, the event
loop never held while the database works; ``task.aenqueue``."""
from __future__ import annotations

import asyncio
import inspect
import threading
import time

import pytest

from jobq_core import (
    AsyncQueue, InvalidState, JobStatus, Queue, Registry, UnusableConnection,
)
from jobq_core.api.async_queue import AsyncQueue as AsyncQueueClass


def run(coroutine):
    return asyncio.run(coroutine)


def test_every_coroutine_takes_the_same_arguments_as_its_queue_method():
    names = [n for n, f in inspect.getmembers(AsyncQueueClass, inspect.iscoroutinefunction)
             if not n.startswith("_") and n != "close"]
    assert {"enqueue", "enqueue_many", "chain", "group", "get", "list", "why", "cancel",
            "retry"} <= set(names)
    for name in names:
        mine = inspect.signature(getattr(AsyncQueueClass, name))
        theirs = inspect.signature(getattr(Queue, name))
        assert list(mine.parameters.values()) == list(theirs.parameters.values()), name
        assert mine.return_annotation == theirs.return_annotation, name


def test_jobs_are_enqueued_read_and_administered_through_coroutines(db):
    async def main():
        async with AsyncQueue(db) as aq:
            first = await aq.enqueue("mail.send", {"to": "ada"}, queue="mail", priority=3)
            ids = await aq.enqueue_many([("report.build", 1), {"kind": "report.build",
                                                               "payload": 2, "delay": 60}])
            job = await aq.get(first)
            assert (job.kind, job.queue, job.priority, job.payload) == (
                "mail.send", "mail", 3, {"to": "ada"})
            assert sorted(j.id for j in await aq.list(kind="report.build")) == sorted(ids)
            assert await aq.count(status="scheduled") == 1
            assert (await aq.why(ids[1])).reason == "scheduled"
            assert await aq.cancel(first) is JobStatus.CANCELLED
            assert (await aq.get(first)).status is JobStatus.CANCELLED
            await aq.retry(first)
            assert (await aq.get(first)).status is JobStatus.PENDING
            with pytest.raises(InvalidState):
                await aq.retry(first)
            await aq.pause("mail")
            assert (await aq.queues())["mail"].paused
            await aq.resume("mail")
            assert not (await aq.queues())["mail"].paused
            assert (await aq.stats()).pending == 3
            assert await aq.attempts(first) == []
            assert await aq.get(10**9) is None
            return aq.queue

    opened = run(main())
    with pytest.raises(Exception):  # closed by async with: it opened it
        opened.enqueue("k")


def test_a_wrapped_queue_is_used_and_left_open(queue):
    async def main():
        async with AsyncQueue(queue) as aq:
            return await aq.enqueue("k", unique_key="once"), await aq.enqueue(
                "k", unique_key="once")

    first, again = run(main())
    assert first == again and queue.get(first).kind == "k"  # still open


def test_chain_and_group_link_their_jobs(db):
    async def main():
        async with AsyncQueue(db) as aq:
            chain = await aq.chain([("a", 1), ("b", 2)])
            members, then = await aq.group([("m", 1), ("m", 2)], then=("done", None))
            return chain, members, then, await aq.dependencies(then), await aq.why(chain[1])

    chain, members, then, deps, why = run(main())
    assert [link.job_id for link in deps.waits_on] == members
    assert why.reason == "waiting"


def test_bad_arguments_fail_with_one_line(queue, db):
    with pytest.raises(TypeError, match="AsyncQueue needs a Queue or a database path"):
        AsyncQueue(42)
    with pytest.raises(TypeError, match="takes no options"):
        AsyncQueue(queue, max_attempts=3)

    async def main():
        aq = AsyncQueue(queue)
        with pytest.raises(TypeError, match="job id must be an integer"):
            await aq.get("7")
        with pytest.raises(UnusableConnection, match="asyncio connection"):
            await aq.enqueue("k", conn=object())

    run(main())


def test_a_task_enqueues_through_a_coroutine(db):
    async def main():
        with Queue(db) as q:
            r = Registry(queue=q)

            @r.task("order.ship", queue="shipping", max_attempts=4)
            def ship(payload):
                pass

            one = await ship.aenqueue({"order": 1})  # the registry's queue
            async with AsyncQueue(db) as aq:
                many = await ship.aenqueue_many([{"order": 2}, {"order": 3}], q=aq,
                                                priority=5)
            jobs = [q.get(i) for i in [one, *many]]
            assert [(j.queue, j.max_attempts) for j in jobs] == [("shipping", 4)] * 3
            assert [j.priority for j in jobs] == [0, 5, 5]
            with pytest.raises(TypeError, match="q= must be an AsyncQueue"):
                await ship.aenqueue({"order": 4}, q=q)
            orphan = Registry().task("k")(lambda p: None)
            with pytest.raises(TypeError, match="needs q= an AsyncQueue"):
                await orphan.aenqueue(None)

    run(main())


def hold_writes(adapter, database: str, seconds: float) -> threading.Event:
    """Another connection holds what an enqueue must wait for (SQLite: the write lock;
    PostgreSQL: the jobs table) for ``seconds``; the event is set once it holds it."""
    held = threading.Event()

    def hold():
        conn = adapter.connect(database, timeout=30)
        try:
            if adapter.name == "sqlite":
                conn.isolation_level = None
                conn.execute("BEGIN IMMEDIATE")
            else:
                conn.execute("LOCK TABLE jobq_jobs IN EXCLUSIVE MODE")
            held.set()
            time.sleep(seconds)
            conn.rollback()
        finally:
            conn.close()

    threading.Thread(target=hold, daemon=True).start()
    assert held.wait(10)
    return held


@pytest.mark.parametrize("through", ["queue", "driver connection"])
def test_the_event_loop_keeps_running_while_an_enqueue_waits(db, adapter, through):
    with Queue(db) as q:
        q.check()  # tables made before they are locked

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        async with AsyncQueue(db) as aq:
            conn = await adapter.async_connect(db) if through != "queue" else None
            hold_writes(adapter, db, 0.4)
            tick = asyncio.create_task(ticker())
            start = time.monotonic()
            job_id = await aq.enqueue("k", {"slow": True}, conn=conn, queue="q")
            waited = time.monotonic() - start
            tick.cancel()
            if conn is not None:
                await conn.commit()
                await conn.close()
            assert (await aq.get(job_id)).queue == "q"
            return waited, ticks

    waited, ticks = run(main())
    assert waited >= 0.2  # it did wait for the lock
    assert ticks >= waited / 0.01 / 4  # and the loop ran on meanwhile (the ticker's pace)


def test_wait_returns_the_finished_job_and_times_out_on_one_that_is_not(producer):
    job_id = producer.enqueue("k", {"n": 1})
    pending = producer.enqueue("other")
    job = producer.claim("w1")

    async def main():
        aq = AsyncQueue(producer)
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        tick = asyncio.create_task(ticker())
        threading.Timer(0.1, producer.complete, (job.id, job.token, {"ok": True})).start()
        done = await aq.wait(job_id, timeout=30)
        with pytest.raises(TimeoutError):
            await aq.wait(pending, timeout=0.05)
        tick.cancel()
        return done, ticks

    done, ticks = run(main())
    assert done.status is JobStatus.SUCCEEDED and done.result == {"ok": True}
    assert ticks >= 3  # the loop ran while the wait did


@pytest.mark.stores("sqlite", why="fork and the thread pool; the store does not matter")
def test_a_forked_child_gets_threads_of_its_own(db):
    import os

    async def one(aq):
        return await aq.enqueue("k")

    with Queue(db) as q:
        aq = AsyncQueue(q)
        run(one(aq))  # the parent's pool, with an idle thread
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                with Queue(db) as mine:
                    run(asyncio.wait_for(one(AsyncQueue(mine)), 10))
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert q.count() == 2
