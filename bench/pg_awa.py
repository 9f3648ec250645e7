"""awa-pg in peers_pg.py's section: awa's Python SDK (a Rust core driven through PyO3),
on its queue-storage engine, drained by its own worker runtime.

Install: ``awa.Client.migrate()`` then ``install_queue_storage()``: on awa-pg 0.6.9
``migrate`` alone leaves a new database on the older canonical engine
(``storage_status()`` says ``canonical``), where ``enqueue_many_copy`` is refused; the
queue-storage engine is the one awa's documentation describes for new installations.
"""
from __future__ import annotations

import asyncio
import dataclasses

import time

from pg_system import ENQUEUED, SLOTS, StopsWhenDrained, in_fork


@dataclasses.dataclass
class AwaNoop:
    """The job's arguments (awa takes a dataclass, a pydantic model or a dict)."""

    i: int


def _install(url):
    import awa
    client = awa.Client(url)
    try:
        client.migrate()
        client.install_queue_storage()
    finally:
        client.close()


def _enqueue(url, n, batch_size):
    """Client.insert per job, or enqueue_many_copy per batch: {"wall_s": ...}."""
    import awa
    client = awa.Client(url)
    try:
        t0 = time.perf_counter()
        if batch_size is None:
            for i in range(n):
                client.insert(AwaNoop(i=i), kind="noop")
        else:
            for lo in range(0, n, batch_size):
                client.enqueue_many_copy([AwaNoop(i=i) for i in range(lo, min(n, lo + batch_size))],
                                         kind="noop")
        return {"wall_s": time.perf_counter() - t0}
    finally:
        client.close()


class Awa(StopsWhenDrained):
    name = "awa-pg"
    batch_note = "Client.enqueue_many_copy(jobs): COPY into queue storage"
    semantics = (f"awa-pg 0.6 (Rust core, PyO3), queue-storage engine: Client.insert() per "
                 f"job; drained by AsyncClient.start([('default', {SLOTS})]) per process "
                 "(its defaults otherwise: poll_interval 200 ms, batched completions) with an "
                 "async no-op handler; no burst mode: stopped once every job has run")
    promises = ("lease: yes, by heartbeat (every 30 s; the maintenance leader rescues a "
                "running job whose heartbeat is 90 s old, and any job past its deadline, "
                "5 min by default); fencing: every completion and heartbeat matches "
                "(job id, run_lease), a counter bumped at each claim, so a rescued job's "
                "first holder writes nothing")

    def available(self):
        try:
            import awa  # noqa: F401
        except ImportError as e:
            return False, f"import awa failed ({e}): pip install 'awa-pg==0.6.9'"
        return super().available()

    # awa's runtime does not survive a fork: the bench's process never starts it (each
    # step below runs in a forked child), so the drains' forked workers start fresh ones.
    def install(self, url):
        in_fork(_install, url)

    def enqueue_elsewhere(self, d, n, batch_size):
        out = in_fork(_enqueue, self.url(d), n, batch_size)
        ENQUEUED[d] = n
        return out

    def run_worker(self, url):
        import awa

        async def go():
            client = awa.AsyncClient(url)

            @client.task(AwaNoop, kind="noop")
            async def noop(job):
                self.ran(job.args.i)

            await client.start([("default", SLOTS)])
            try:
                await asyncio.get_running_loop().run_in_executor(None, self.wait_drained)
            finally:
                await client.shutdown()
                await client.close()

        asyncio.run(go())
