"""A FastAPI shop on jobq's asyncio API: an order, its stock reservation and the job that
ships it commit in one transaction, or none of them does.

    JOBQ_DATABASE=shop.db uvicorn fastapi_app:app            # or postgresql://app@db/shop
    jobq run --app fastapi_app --db shop.db                   # the worker: ships orders
"""
from __future__ import annotations

import os
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, HTTPException
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from jobq_core import AsyncQueue, Registry

DATABASE = os.environ.get("JOBQ_DATABASE", "shop.db")


def async_url(database: str) -> str:
    """The same database for SQLAlchemy's asyncio engine: psycopg or aiosqlite."""
    if database.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + database.partition("://")[2]
    return f"sqlite+aiosqlite:///{database}"


engine = create_async_engine(async_url(DATABASE))
Session = async_sessionmaker(engine, expire_on_commit=False)
queue = AsyncQueue(DATABASE)
registry = Registry()


class Base(DeclarativeBase):
    pass


class Order(Base):
    __tablename__ = "orders"
    id: Mapped[int] = mapped_column(primary_key=True)
    item: Mapped[str]
    quantity: Mapped[int]
    shipped: Mapped[bool] = mapped_column(default=False)


class Stock(Base):
    __tablename__ = "stock"
    item: Mapped[str] = mapped_column(primary_key=True)
    left: Mapped[int]


@registry.task("order.ship", queue="shipping")
async def ship(payload: dict, ctx) -> None:
    async with Session() as session:
        order = await session.get(Order, payload["order"])
        order.shipped = True
        # The job succeeds in the same commit as the order's update, never without it.
        await ctx.acomplete({"shipped": order.id}, conn=session)
        await session.commit()


@asynccontextmanager
async def lifespan(app: FastAPI):
    async with engine.begin() as conn:
        await conn.run_sync(Base.metadata.create_all)
    await queue.check()
    yield
    await queue.close()
    await engine.dispose()


app = FastAPI(lifespan=lifespan)


async def session():
    async with Session() as s:
        yield s  # left without commit (an error response): rolled back


@app.post("/orders")
async def create_order(item: str, quantity: int = 1, s: AsyncSession = Depends(session)):
    order = Order(item=item, quantity=quantity)
    s.add(order)
    await s.flush()  # the order's id
    job_id = await ship.aenqueue({"order": order.id}, q=queue, conn=s)
    reserved = await s.execute(update(Stock).where(Stock.item == item, Stock.left >= quantity)
                               .values(left=Stock.left - quantity))
    if reserved.rowcount != 1:
        raise HTTPException(409, f"not enough {item} in stock")  # no order, no job
    await s.commit()
    return {"order": order.id, "job": job_id}


@app.get("/jobs/{job_id}")
async def job_status(job_id: int, wait: float = 0):
    """The job now, or with ``?wait=10`` once it has finished (408 if not within 10 s)."""
    try:
        job = await queue.wait(job_id, timeout=wait) if wait else await queue.get(job_id)
    except TimeoutError:
        raise HTTPException(408, "not finished yet") from None
    if job is None:
        raise HTTPException(404, "no such job")
    return {"status": job.status, "result": job.result, "error": job.error}
