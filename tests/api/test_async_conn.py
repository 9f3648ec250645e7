"""conn= in asyncio code: AsyncQueue's enqueue and ``ctx.acomplete`` join the transaction
of a SQLAlchemy AsyncSession or AsyncConnection (aiosqlite, psycopg) or of the driver's
own asyncio connection, and commit or roll back with the application's writes, fenced as
the synchronous path is."""
from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.pool import NullPool

from jobq_core import AsyncQueue, JobContext, JobStatus, LeaseLost, Queue, UnusableConnection
from jobq_core.testing import FakeClock

pytest.importorskip("aiosqlite")
pytest.importorskip("greenlet")


@pytest.fixture
def app_db(db, adapter):
    """The queue's database with the application's table ``orders``."""
    with Queue(db) as q:
        q.check()
    with adapter.connect(db, timeout=30) as conn:
        conn.execute("CREATE TABLE orders (id integer PRIMARY KEY, state text NOT NULL)")
        conn.commit()
    return db


def orders(adapter, db) -> list[tuple[int, str]]:
    conn = adapter.connect(db, timeout=30)
    try:
        return [tuple(r) for r in conn.execute("SELECT id, state FROM orders ORDER BY id")]
    finally:
        conn.close()


def engine(adapter, db):
    return create_async_engine(adapter.async_sqlalchemy_url(db), poolclass=NullPool)


def test_an_enqueue_in_an_async_session_commits_and_rolls_back_with_it(app_db, adapter):
    async def main():
        e = engine(adapter, app_db)
        async with AsyncQueue(app_db) as aq:
            async with AsyncSession(e) as session:
                await session.execute(sa.text("INSERT INTO orders VALUES (1, 'new')"))
                await aq.enqueue("order.ship", {"order": 1}, conn=session)
                await session.rollback()
            assert await aq.count() == 0
            async with AsyncSession(e) as session:  # nothing executed on it yet
                kept = await aq.enqueue("order.ship", {"order": 2}, conn=session)
                more = await aq.enqueue_many([("order.audit", 2)], conn=session)
                await session.execute(sa.text("INSERT INTO orders VALUES (2, 'new')"))
                await session.commit()
            assert (await aq.get(kept)).payload == {"order": 2}
            assert (await aq.get(more[0])).kind == "order.audit"
            assert await aq.count() == 2
        await e.dispose()

    asyncio.run(main())
    assert orders(adapter, app_db) == [(2, "new")]


def test_an_enqueue_on_an_async_connection_commits_and_rolls_back_with_it(app_db, adapter):
    async def main():
        e = engine(adapter, app_db)
        async with AsyncQueue(app_db) as aq:
            with pytest.raises(RuntimeError):
                async with e.begin() as conn:
                    await conn.execute(sa.text("INSERT INTO orders VALUES (1, 'new')"))
                    await aq.enqueue("order.ship", {"order": 1}, conn=conn)
                    raise RuntimeError("the request failed")
            async with e.begin() as conn:
                await conn.execute(sa.text("INSERT INTO orders VALUES (2, 'new')"))
                kept = await aq.enqueue("order.ship", {"order": 2}, conn=conn,
                                        unique_key="order-2")
                again = await aq.enqueue("order.ship", {"order": 2}, conn=conn,
                                         unique_key="order-2")
            assert kept == again and await aq.count() == 1
        await e.dispose()

    asyncio.run(main())
    assert orders(adapter, app_db) == [(2, "new")]


def test_an_enqueue_on_the_drivers_own_async_connection_commits_and_rolls_back(app_db,
                                                                               adapter):
    async def main():
        async with AsyncQueue(app_db) as aq:
            conn = await adapter.async_connect(app_db)
            try:
                await conn.execute("INSERT INTO orders VALUES (1, 'new')")
                await aq.enqueue("order.ship", {"order": 1}, conn=conn)
                await conn.rollback()
                assert await aq.count() == 0
                await conn.execute("INSERT INTO orders VALUES (2, 'new')")
                kept = await aq.enqueue_many([("order.ship", {"order": 2})], conn=conn)
                await conn.commit()
            finally:
                await conn.close()
            assert (await aq.get(kept[0])).kind == "order.ship" and await aq.count() == 1

    asyncio.run(main())
    assert orders(adapter, app_db) == [(2, "new")]


def test_an_async_connection_is_refused_by_queue_and_a_sync_one_by_async_queue(app_db,
                                                                                adapter):
    async def main():
        e = engine(adapter, app_db)
        with Queue(app_db) as q:
            async with AsyncSession(e) as session:
                with pytest.raises(UnusableConnection, match="give an AsyncConnection or "
                                   "AsyncSession to AsyncQueue"):
                    q.enqueue("k", conn=session)
            conn = await adapter.async_connect(app_db)
            try:
                with pytest.raises(UnusableConnection):
                    q.enqueue("k", conn=conn)
            finally:
                await conn.close()
            sync = adapter.connect(app_db, timeout=30)
            try:
                with pytest.raises(UnusableConnection, match="synchronous connection goes "
                                   "to Queue"):
                    await AsyncQueue(q).enqueue("k", conn=sync)
            finally:
                sync.close()
            assert q.count() == 0
        await e.dispose()

    asyncio.run(main())


def claimed(q: Queue) -> JobContext:
    job = q.claim("w1")
    assert job is not None
    return JobContext(q, job.id, job.token, job.attempts, "w1", job.kind, 30.0)


def test_acomplete_succeeds_the_job_in_the_handlers_own_transaction(app_db, adapter):
    with Queue(app_db, clock=FakeClock()) as q:
        job_id = q.enqueue("order.ship", {"order": 1})
        ctx = claimed(q)

        async def main():
            e = engine(adapter, app_db)
            async with AsyncSession(e) as session:
                await session.execute(sa.text("INSERT INTO orders VALUES (1, 'shipped')"))
                await ctx.acomplete({"shipped": 1}, conn=session)
                assert q.get(job_id).status is JobStatus.RUNNING  # not committed yet
                await session.commit()
            await e.dispose()

        asyncio.run(main())
        assert q.get(job_id).status is JobStatus.SUCCEEDED
        assert q.get(job_id).result == {"shipped": 1}
    assert orders(adapter, app_db) == [(1, "shipped")]


def test_acomplete_with_a_stale_token_raises_lease_lost_and_writes_nothing(app_db, adapter):
    with Queue(app_db, clock=FakeClock()) as q:
        job_id = q.enqueue("order.ship", {"order": 1})
        stale = claimed(q)
        q.retry(job_id, force=True)  # another run takes the job over
        current = claimed(q)

        async def main():
            conn = await adapter.async_connect(app_db)
            try:
                with pytest.raises(LeaseLost):
                    await stale.acomplete({"zombie": True}, conn=conn)
                await conn.commit()  # even committed, the stale completion wrote nothing
            finally:
                await conn.close()

        asyncio.run(main())
        job = q.get(job_id)
        assert job.status is JobStatus.RUNNING and job.token == current._token
        assert job.result is None and stale.cancelled.is_set()


def test_a_chain_and_a_group_commit_and_roll_back_with_the_async_session(app_db, adapter):
    async def main():
        e = engine(adapter, app_db)
        async with AsyncQueue(app_db) as aq:
            async with AsyncSession(e) as session:
                await aq.chain([("a", 1), ("b", 2)], conn=session)
                await session.rollback()
            assert await aq.count() == 0
            async with AsyncSession(e) as session:
                chain = await aq.chain([("a", 1), ("b", 2)], conn=session)
                members, then = await aq.group([("m", 1), ("m", 2)], then=("done", None),
                                               conn=session)
                after = await aq.enqueue("last", after=[then], conn=session)
                await session.commit()
            assert (await aq.why(chain[1])).reason == "waiting"
            deps = await aq.dependencies(then)
            assert [link.job_id for link in deps.waits_on] == members
            assert [link.job_id for link in (await aq.dependencies(after)).waits_on] == [then]
        await e.dispose()

    asyncio.run(main())
