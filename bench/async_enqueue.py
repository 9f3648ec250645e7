"""``await aq.enqueue(...)`` two ways, on both stores. (A benchmark, not a test.)

    python bench/async_enqueue.py [--n 3000] [--rounds 3] [--tasks 1,16]
                                  [--pg-url postgresql://postgres@127.0.0.1:5432/postgres]

Each round enqueues ``--n`` no-op jobs from ``--tasks`` concurrent asyncio tasks, into a
fresh database, in each way, alternating the ways round by round:

- ``thread``: ``AsyncQueue.enqueue`` as shipped: ``Queue.enqueue`` on a thread of the
  shared pool (the store's own connections, statements and policy);
- ``native``: the asyncio driver on the event loop: psycopg ``AsyncConnection`` s (as many
  as the store's pool, 2, taken in turn) on PostgreSQL, an aiosqlite connection on SQLite
  (``synchronous=NORMAL``, as the store's), each sending
  the store's own single-job INSERT (the job made by the same ``JobMaker``) in autocommit,
  without the store's NOTIFY (the best case for it: the store sends one per queue at most
  every few ms).

Prints per way the enqueue rate, the p50 and p99 latency of one ``await``, and how late a
ticker task that sleeps 1 ms at a time woke up (its p99 and max: how long the event loop
was held), then the medians over the rounds.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg

from jobq_core import AsyncQueue, Queue
from jobq_core.store import sql as shared_sql
from jobq_core.store.postgres.dialect import INSERT_ONE, text_array

Enqueue = Callable[[int], Awaitable[Any]]


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


async def measure(enqueue: Enqueue, n: int, tasks: int) -> dict[str, float]:
    latencies: list[float] = []
    lateness: list[float] = []
    stop = False

    async def ticker() -> None:
        while not stop:
            t = time.perf_counter()
            await asyncio.sleep(0.001)
            lateness.append(time.perf_counter() - t - 0.001)

    async def producer(share: range) -> None:
        for i in share:
            t = time.perf_counter()
            await enqueue(i)
            latencies.append(time.perf_counter() - t)

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    start = time.perf_counter()
    await asyncio.gather(*(producer(range(k, n, tasks)) for k in range(tasks)))
    elapsed = time.perf_counter() - start
    stop = True
    await tick
    return {"rate": n / elapsed, "p50": pct(latencies, 50) * 1e3,
            "p99": pct(latencies, 99) * 1e3, "lag99": pct(lateness, 99) * 1e3,
            "lagmax": max(lateness) * 1e3}


async def thread_way(database: str, n: int, tasks: int) -> dict[str, float]:
    async with AsyncQueue(database) as aq:
        await aq.check()
        return await measure(lambda i: aq.enqueue("noop", {"i": i}), n, tasks)


async def native_pg(database: str, n: int, tasks: int) -> dict[str, float]:
    with Queue(database) as q:  # the job maker and the clock; its tables made
        q.check()
        conns = [await psycopg.AsyncConnection.connect(database, autocommit=True)
                 for _ in range(2)]
        locks = [asyncio.Lock() for _ in conns]  # FIFO: no task starves
        no_notify = text_array([])

        async def enqueue(i: int) -> None:
            job = q._jobs.default_job("noop", {"i": i}, q.clock.now())
            async with locks[i % len(conns)]:
                await conns[i % len(conns)].execute(INSERT_ONE,
                                                    (*job, q.clock.now(), no_notify))

        try:
            return await measure(enqueue, n, tasks)
        finally:
            for c in conns:
                await c.close()


async def native_sqlite(database: str, n: int, tasks: int) -> dict[str, float]:
    import aiosqlite

    with Queue(database) as q:
        async with aiosqlite.connect(database, isolation_level=None) as conn:
            await conn.execute("PRAGMA busy_timeout=30000")
            await conn.execute("PRAGMA synchronous=NORMAL")  # the store's default

            async def enqueue(i: int) -> None:
                job = q._jobs.default_job("noop", {"i": i}, q.clock.now())
                await conn.execute(shared_sql.INSERT_BARE, (*job[:6], q.clock.now()))

            return await measure(enqueue, n, tasks)


class PgDatabases:
    def __init__(self, server: str):
        self.server = server

    def new(self) -> str:
        name = f"jobq_async_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(self.server, autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{name}"')
        return self.server.rsplit("/", 1)[0] + "/" + name

    def drop(self, url: str) -> None:
        with psycopg.connect(self.server, autocommit=True) as c:
            c.execute(f'DROP DATABASE "{url.rsplit("/", 1)[1]}" WITH (FORCE)')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tasks", default="1,16")
    ap.add_argument("--stores", default="sqlite,postgresql")
    ap.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = ap.parse_args()
    pg = PgDatabases(args.pg_url)
    ways = {"sqlite": {"thread": thread_way, "native": native_sqlite},
            "postgresql": {"thread": thread_way, "native": native_pg}}
    print(f"{'store':<11}{'tasks':>6} {'way':<7}{'enq/s':>8}{'p50 ms':>8}{'p99 ms':>8}"
          f"{'lag p99':>9}{'lag max':>9}")
    for store in args.stores.split(","):
        for tasks in (int(t) for t in args.tasks.split(",")):
            results: dict[str, list[dict[str, float]]] = {w: [] for w in ways[store]}
            for r in range(args.rounds):
                order = list(ways[store]) if r % 2 == 0 else list(reversed(ways[store]))
                for way in order:
                    if store == "sqlite":
                        database = os.path.join(tempfile.mkdtemp(prefix="jobq-aenq-"), "j.db")
                    else:
                        database = pg.new()
                    try:
                        results[way].append(asyncio.run(ways[store][way](database, args.n,
                                                                          tasks)))
                    finally:
                        if store == "postgresql":
                            pg.drop(database)
            for way, runs in results.items():
                med = {k: statistics.median(run[k] for run in runs) for k in runs[0]}
                print(f"{store:<11}{tasks:>6} {way:<7}{med['rate']:>8.0f}{med['p50']:>8.2f}"
                      f"{med['p99']:>8.2f}{med['lag99']:>9.2f}{med['lagmax']:>9.2f}", flush=True)


if __name__ == "__main__":
    main()
