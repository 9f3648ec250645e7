"""chancy in peers_pg.py's section: chancy's own Worker, its queue on the asyncio
executor, drained until every job has run (it has no burst mode).

Settings, each one of chancy's documented options: the queue runs on
``Chancy.Executor.Async`` with concurrency 8 (its default executor is a process pool
sized by the core count), with ``eager_polling`` (without it a worker fetches again only
after ``polling_interval``, 5 s, or on a push notification, so a backlog drains 8 jobs per
5 s); chancy's default logger writes one INFO line per job, so its logger here is set to
WARNING.
"""
from __future__ import annotations

import asyncio
import logging

from pg_system import SLOTS, StopsWhenDrained

_DRAINING: list[StopsWhenDrained] = []  # the system whose drain this worker process runs
LOG = logging.getLogger("peers.chancy")
LOG.setLevel(logging.WARNING)


async def noop(*, i: int) -> None:
    """The job's function; chancy imports it by name (``pg_chancy.noop``)."""
    _DRAINING[0].ran(i)


def _app(url: str):
    from chancy import Chancy
    return Chancy(url, log=LOG)


def _queue():
    from chancy import Chancy, Queue
    return Queue("default", concurrency=SLOTS, executor=Chancy.Executor.Async,
                 eager_polling=True)


class ChancySystem(StopsWhenDrained):
    name = "chancy"
    batch_note = "Chancy.sync_push_many(jobs): one transaction, one INSERT per job"
    semantics = (f"chancy 0.26: Chancy.sync_push() per job; drained by its Worker per "
                 f"process, queue 'default' on the asyncio executor, concurrency {SLOTS}, "
                 "eager_polling (polling_interval 5 s otherwise); completions written by the "
                 "worker's update loop once a second; default plugins (leadership, pruner, "
                 "recovery, metrics, workflow); no burst mode: stopped once every job has run")
    promises = ("lease: per worker, not per job: a worker's heartbeat (every 30 s) goes "
                "stale after 90 s, and the leader's Recovery plugin (every 60 s) puts its "
                "running jobs back to pending; fencing: yes, each claim has a claim_id and "
                "updates from a claim that recovery invalidated are discarded")

    def available(self):
        try:
            import chancy  # noqa: F401
        except ImportError as e:
            return False, f"import chancy failed ({e}): pip install 'chancy==0.26.0'"
        return super().available()

    def install(self, url):
        async def go():
            async with _app(url) as app:
                await app.migrate()
                await app.declare(_queue())

        asyncio.run(go())

    def connect(self, url):
        from chancy import Job
        app = _app(url)
        app.__enter__()
        return app, Job.from_func(noop)

    def send(self, client, i):
        app, job = client
        app.sync_push(job.with_kwargs(i=i))

    def send_many(self, client, ids):
        app, job = client
        for _ in app.sync_push_many([job.with_kwargs(i=i) for i in ids], batch_size=len(ids)):
            pass

    def disconnect(self, client):
        client[0].__exit__(None, None, None)

    def left(self, d):
        return self.count(d, "SELECT count(*) FROM chancy_jobs WHERE state IN ('pending', "
                             "'running', 'retrying')")

    def run_worker(self, url):
        from chancy import Worker
        _DRAINING[:] = [self]

        async def go():
            async with _app(url) as app:
                worker = Worker(app, register_signal_handlers=False)
                await worker.start()
                try:
                    await asyncio.get_running_loop().run_in_executor(None, self.wait_drained)
                finally:
                    await worker.stop()

        asyncio.run(go())
