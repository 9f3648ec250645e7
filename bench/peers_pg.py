"""peers_pg.py - the PostgreSQL section of peers.py: the same workloads on one local
PostgreSQL server, in the same run.

Systems (each on a database of its own, created for the measurement and dropped after):

  raw-PG        jobq's claim and fenced-complete statements hand-written on psycopg,
                one job per transaction (the physical anchor): every ratio of the
                section is "system / raw-PG in the same round"
  raw-PG-batch  the same statements batched: up to 8 jobs claimed by one statement,
                their completions written by one (the anchor for a batching worker)
  jobq-PG       jobq's API: Queue.enqueue / enqueue_many, claim + complete per job
  jobq-PG-worker  jobq's Worker(queue, registry).run(burst=True), default settings
  procrastinate procrastinate's own worker (App.run_worker(wait=False)), an async
                no-op task, concurrency 8 (jobq's default slots)
  pgqueuer      pgqueuer's own worker (PgQueuer.run(mode=drain)), an async no-op
                entrypoint, its defaults (batch_size 10), psycopg driver

Every system's drains count, per job, what its no-op handler saw (or, for the worker
systems, what the database says each worker finished), so duplicates and losses show.
What each system promises when a worker stalls is in ``promises`` and printed under the
table: a lease (can another worker take a job whose worker went silent?) and fencing
(is the first holder's late completion refused?).

Needs: psycopg (jobq's postgres extra); procrastinate 3.10 and pgqueuer 1.6 for their
rows (pip install 'procrastinate==3.10.*' 'pgqueuer==1.6.*').
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from urllib.parse import urlsplit, urlunsplit

from peers import JOBQ_KIND, JOBQ_REGISTRY, LEASE_S, System, jobq_payload, payload_text

SERVER_URL = "postgresql://postgres@127.0.0.1:5432/postgres"  # set by peers.py --pg-url
BATCH_CLAIM = 8  # raw-PG-batch: jobs per claim statement (jobq's default concurrency)
ASYNC_SLOTS = 8  # procrastinate: jobs at once (its default is 1)

CLAIM = (
    "WITH picked AS MATERIALIZED (SELECT id FROM jobq_jobs WHERE status='pending' AND "
    "run_at<=%s ORDER BY priority DESC, run_at, id LIMIT %s FOR UPDATE SKIP LOCKED) "
    "UPDATE jobq_jobs j SET status='running', attempts=j.attempts+1, lease_until=%s, "
    "worker=%s, token=nextval('jobq_tokens'), started_at=%s, heartbeat_at=%s "
    "WHERE j.id = ANY(ARRAY(SELECT id FROM picked)) RETURNING j.id, j.token, j.payload"
)
COMPLETE = (
    "UPDATE jobq_jobs SET status='succeeded', result=NULL, finished_at=%s, lease_until=NULL "
    "WHERE id=%s AND status='running' AND token=%s"
)
COMPLETE_MANY = (
    "UPDATE jobq_jobs j SET status='succeeded', result=NULL, finished_at=%s, lease_until=NULL "
    "FROM unnest(%s::bigint[], %s::bigint[]) AS v(id, token) "
    "WHERE j.id=v.id AND j.status='running' AND j.token=v.token"
)
INSERT = (
    "INSERT INTO jobq_jobs(kind, payload, queue, priority, run_at, max_attempts, created_at) "
    "VALUES ('noop', %s, 'default', 0, %s, 20, %s)"
)
INSERT_MANY = (
    "INSERT INTO jobq_jobs(kind, payload, queue, priority, run_at, max_attempts, created_at) "
    "SELECT 'noop', p, 'default', 0, %s, 20, %s FROM unnest(%s::text[]) AS p"
)
JOBQ_LEFT = "SELECT count(*) FROM jobq_jobs WHERE status IN ('pending', 'running')"


def _psycopg():
    import psycopg
    return psycopg


def db_url(name: str) -> str:
    return urlunsplit(urlsplit(SERVER_URL)._replace(path=f"/{name}"))


def db_name(d: str) -> str:
    """The database that stands for the harness's directory ``d``."""
    return "peers_" + hashlib.sha1(d.encode()).hexdigest()[:12]


def _admin(sql: str) -> None:
    with _psycopg().connect(SERVER_URL, autocommit=True) as c:
        c.execute(sql)


def server_available() -> tuple[bool, str]:
    try:
        with _psycopg().connect(SERVER_URL, connect_timeout=3) as c:
            c.execute("SELECT 1")
        return True, ""
    except Exception as e:  # noqa: BLE001 - one line in the report
        return False, f"no PostgreSQL server at {SERVER_URL} ({str(e).strip().splitlines()[0]})"


def server_settings() -> dict:
    with _psycopg().connect(SERVER_URL) as c:
        return dict(c.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN ('server_version', 'fsync', "
            "'synchronous_commit', 'shared_buffers', 'autovacuum', 'max_connections')").fetchall())


class PgSystem(System):
    """A system on the PostgreSQL server: the harness's directory ``d`` names a database."""

    section = "pg"
    baseline = "raw-PG"
    promises = ""

    def available(self):
        try:
            _psycopg()
        except ImportError as e:
            return False, f"psycopg is not installed ({e}): pip install 'jobq[postgres]'"
        return server_available()

    def url(self, d: str) -> str:
        return db_url(db_name(d))

    def create(self, d: str) -> None:
        _admin(f'CREATE DATABASE "{db_name(d)}"')
        self.install(self.url(d))

    def install(self, url: str) -> None:
        """Create the system's tables in the new database."""

    def copy_from(self, src: str, d: str) -> None:
        _admin(f'CREATE DATABASE "{db_name(d)}" TEMPLATE "{db_name(src)}"')

    def discard(self, d: str) -> None:
        _admin(f'DROP DATABASE IF EXISTS "{db_name(d)}" WITH (FORCE)')

    def after_enqueue(self, d: str) -> None:
        pass

    def count(self, d: str, sql: str):
        try:
            with _psycopg().connect(self.url(d)) as c:
                return c.execute(sql).fetchone()[0]
        except Exception:  # noqa: BLE001 - the cross-check is best effort
            return None

    def settings(self, h) -> dict:
        return {}


# -- raw: jobq's statements on bare psycopg ---------------------------------------------------

class RawPG(PgSystem):
    name = "raw-PG"
    kind = "raw"
    supports_batch = True
    batch_note = "INSERT ... SELECT FROM unnest(%s::text[]), one statement per batch"
    semantics = ("jobq's schema and statements on one autocommit psycopg connection: claim = "
                 "one UPDATE ... FOR UPDATE SKIP LOCKED ... RETURNING, complete = UPDATE fenced "
                 "by id, status='running' and token; one job per transaction")
    promises = "lease: lease_until written, but nothing reaps it; fencing: id + status + token"

    def install(self, url):
        from jobq_core import Queue
        Queue(url).close()

    def open(self, d):
        return _psycopg().connect(self.url(d), autocommit=True)

    def close(self, c):
        c.close()

    def enqueue(self, c, i):
        now = time.time()
        c.execute(INSERT, (payload_text(i), now, now))

    def enqueue_batch(self, c, ids):
        now = time.time()
        c.execute(INSERT_MANY, (now, now, [payload_text(i) for i in ids]))

    def open_worker(self, d, wid):
        return {"c": self.open(d), "name": f"w{wid}-{os.getpid()}", "claimed": [], "done": []}

    def _claim_rows(self, h, limit):
        now = time.time()
        return h["c"].execute(CLAIM, (now, limit, now + LEASE_S, h["name"], now, now)).fetchall()

    def claim(self, h):
        rows = self._claim_rows(h, 1)
        if not rows:
            return None
        job_id, token, payload = rows[0]
        return json.loads(payload)["i"], (job_id, token)

    def complete(self, h, ctx):
        return h["c"].execute(COMPLETE, (time.time(), *ctx)).rowcount == 1

    def left(self, d):
        return self.count(d, JOBQ_LEFT)


class RawPGBatch(RawPG):
    name = "raw-PG-batch"
    workloads = ("drain1", "drain4")
    template_from = "raw-PG"
    semantics = (f"raw-PG's statements batched: up to {BATCH_CLAIM} jobs claimed by one "
                 "statement, their fenced completions written by one (UPDATE ... FROM unnest)")

    def claim(self, h):
        if not h["claimed"]:
            self._flush(h)
            h["claimed"] = [(json.loads(p)["i"], (job_id, token))
                            for job_id, token, p in self._claim_rows(h, BATCH_CLAIM)]
            if not h["claimed"]:
                return None
        return h["claimed"].pop(0)

    def complete(self, h, ctx):
        h["done"].append(ctx)
        return True  # written with the next claim; _flush checks every one was accepted

    def _flush(self, h):
        done, h["done"] = h["done"], []
        if not done:
            return
        n = h["c"].execute(COMPLETE_MANY, (time.time(), [x[0] for x in done],
                                           [x[1] for x in done])).rowcount
        if n != len(done):
            raise RuntimeError(f"raw-PG-batch: {len(done) - n} completions fenced out")


# -- jobq ------------------------------------------------------------------------------------

class JobqPG(PgSystem):
    name = "jobq-PG"
    kind = "project"
    supports_batch = True
    batch_note = "q.enqueue_many([(kind, payload), ...])"
    semantics = "jobq's API on a postgresql:// URL: enqueue, enqueue_many, claim + complete per job"
    promises = ("lease: yes (heartbeat extends it; the reaper, in every worker, takes expired "
                "ones back); fencing: id + status + per-claim token, a fenced-out completion "
                "raises LeaseLost")

    def install(self, url):
        from jobq_core import Queue
        Queue(url).close()

    def open(self, d):
        from jobq_core import Queue
        return Queue(self.url(d))

    def close(self, q):
        q.close()

    def enqueue(self, q, i):
        q.enqueue(JOBQ_KIND, jobq_payload(i))

    def enqueue_batch(self, q, ids):
        q.enqueue_many([(JOBQ_KIND, jobq_payload(i)) for i in ids])

    def open_worker(self, d, wid):
        return (self.open(d), f"w{wid}-{os.getpid()}")

    def claim(self, h):
        job = h[0].claim(h[1], lease=LEASE_S)
        return None if job is None else (job.payload["i"], job)

    def complete(self, h, job):
        from jobq_core import LeaseLost
        try:
            h[0].complete(job.id, job.token)
        except LeaseLost:
            return False
        return True

    def left(self, d):
        return self.count(d, JOBQ_LEFT)


class JobqPGWorker(JobqPG):
    """The first claim runs the whole burst; the keys are the payloads of the jobs the
    database says this process's worker finished, once per attempt."""

    name = "jobq-PG-worker"
    workloads = ("drain1", "drain4")
    template_from = "jobq-PG"
    semantics = ("jobq_core.Worker(queue, registry).run(burst=True) per process, default "
                 "settings (8 slots, batched claims and completions, heartbeats)")

    def open_worker(self, d, wid):
        return {"d": d, "ran": None}

    def claim(self, h):
        if h["ran"] is None:
            from jobq_core import Queue, Worker
            with Queue(self.url(h["d"])) as q:
                worker = Worker(q, JOBQ_REGISTRY)
                worker.run(burst=True, handle_signals=False)
            with _psycopg().connect(self.url(h["d"])) as c:
                rows = c.execute("SELECT payload, attempts FROM jobq_jobs WHERE "
                                 "status='succeeded' AND worker=%s", (worker.id,)).fetchall()
            h["ran"] = iter([json.loads(p)["i"] for p, attempts in rows for _ in range(attempts)])
        key = next(h["ran"], None)
        return None if key is None else (key, key)

    def complete(self, h, ctx):
        return True


# -- peers -----------------------------------------------------------------------------------

_RAN: list[int] = []  # what this process's no-op handlers saw


class _RunsItsOwnWorker(PgSystem):
    """A peer drained by its own worker: the first claim runs it until the queue is empty,
    then hands out the keys its no-op handler saw."""

    workloads = ("enqueue", "batch", "drain1", "drain4")
    supports_batch = True

    def open_worker(self, d, wid):
        return {"d": d, "ran": None}

    def run_worker(self, url: str) -> None:
        raise NotImplementedError

    def claim(self, h):
        if h["ran"] is None:
            del _RAN[:]
            self.run_worker(self.url(h["d"]))
            h["ran"] = iter(list(_RAN))
        key = next(h["ran"], None)
        return None if key is None else (key, key)

    def complete(self, h, ctx):
        return True


def _procrastinate_app(url: str):
    import procrastinate
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))

    @app.task(name="noop")
    async def noop(i):
        _RAN.append(i)

    return app, noop


class Procrastinate(_RunsItsOwnWorker):
    name = "procrastinate"
    batch_note = "task.batch_defer(*kwargs): one INSERT for the batch"
    semantics = (f"procrastinate {''}3.10: task.defer() per job; drained by App.run_worker("
                 f"wait=False, concurrency={ASYNC_SLOTS}) per process with an async no-op task; "
                 "a per-row NOTIFY trigger; jobs kept (delete_jobs='never', its default)")
    promises = ("lease: no per-job lease (a worker heartbeat marks a silent worker stalled "
                "after 30 s; its jobs run again only when the application calls "
                "retry_stalled_jobs); fencing: status only (todo/doing), so a stalled "
                "worker's late completion is accepted")

    def available(self):
        try:
            import procrastinate  # noqa: F401
        except ImportError as e:
            return False, f"import procrastinate failed ({e}): pip install 'procrastinate==3.10.*'"
        return super().available()

    def install(self, url):
        app, _ = _procrastinate_app(url)
        with app.open():
            app.schema_manager.apply_schema()

    def open(self, d):
        app, task = _procrastinate_app(self.url(d))
        app.open()
        return app, task

    def close(self, h):
        h[0].close()

    def enqueue(self, h, i):
        h[1].defer(i=i)

    def enqueue_batch(self, h, ids):
        h[1].batch_defer(*({"i": i} for i in ids))

    def run_worker(self, url):
        app, _ = _procrastinate_app(url)
        app.run_worker(wait=False, concurrency=ASYNC_SLOTS, install_signal_handlers=False)

    def left(self, d):
        return self.count(d, "SELECT count(*) FROM procrastinate_jobs WHERE status IN "
                             "('todo', 'doing')")


class PgQueuer(_RunsItsOwnWorker):
    name = "pgqueuer"
    batch_note = "Queries.enqueue(lists): one INSERT ... unnest for the batch"
    semantics = ("pgqueuer 1.6 with its psycopg driver: SyncQueries.enqueue() per job; "
                 "drained by PgQueuer.run(mode=drain) per process (its defaults: batch_size "
                 "10) with an async no-op entrypoint; statement-level NOTIFY triggers; a "
                 "finished job is deleted (history in its log table)")
    promises = ("lease: yes, by per-job heartbeat (a picked job whose heartbeat is older "
                "than heartbeat_timeout, 30 s, is picked again); fencing: none, a "
                "completion deletes the job by id, so the first holder's late completion "
                "is accepted")

    def available(self):
        try:
            import pgqueuer  # noqa: F401
        except ImportError as e:
            return False, f"import pgqueuer failed ({e}): pip install 'pgqueuer==1.6.*'"
        return super().available()

    def install(self, url):
        from pgqueuer.adapters.drivers.psycopg import PsycopgDriver
        from pgqueuer.queries import Queries

        async def go():
            conn = await _psycopg().AsyncConnection.connect(url, autocommit=True)
            try:
                await Queries(PsycopgDriver(conn)).install()
            finally:
                await conn.close()

        asyncio.run(go())

    def open(self, d):
        from pgqueuer.adapters.drivers.psycopg import SyncPsycopgDriver
        from pgqueuer.queries import SyncQueries
        conn = _psycopg().connect(self.url(d), autocommit=True)
        return conn, SyncQueries(SyncPsycopgDriver(conn))

    def close(self, h):
        h[0].close()

    def enqueue(self, h, i):
        h[1].enqueue("noop", payload_text(i).encode())

    def enqueue_batch(self, h, ids):
        ids = list(ids)
        h[1].enqueue(["noop"] * len(ids), [payload_text(i).encode() for i in ids], [0] * len(ids))

    def run_worker(self, url):
        from pgqueuer import PgQueuer as App
        from pgqueuer.adapters.drivers.psycopg import PsycopgDriver
        from pgqueuer.domain.types import QueueExecutionMode

        async def go():
            conn = await _psycopg().AsyncConnection.connect(url, autocommit=True)
            try:
                pgq = App(PsycopgDriver(conn))

                @pgq.entrypoint("noop")
                async def noop(job):
                    _RAN.append(json.loads(job.payload)["i"])

                await pgq.run(mode=QueueExecutionMode.drain)
            finally:
                await conn.close()

        asyncio.run(go())

    def left(self, d):
        return self.count(d, "SELECT count(*) FROM pgqueuer")


def systems() -> list[PgSystem]:
    return [RawPG(), RawPGBatch(), JobqPG(), JobqPGWorker(), Procrastinate(), PgQueuer()]
