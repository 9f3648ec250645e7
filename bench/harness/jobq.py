"""jobq's adapter: JobqSystem (its API: enqueue, enqueue_many, claim, complete) and
JobqWorkerSystem (its Worker, thread or process pool), on a SQLite file.

Written against jobq_core's API:
  q = jobq_core.Queue(path)
  q.enqueue(kind, payload) -> id
  q.enqueue_many([(kind, payload), ...])
  job = q.claim(worker_id, lease=30.0)   -> None | object with .id, .token
  q.complete(job.id, job.token)          -> raises jobq_core.LeaseLost when fenced out
If the API changes, change only this module. Jobs are identified by job.id for the
exactly-once check.
"""
from __future__ import annotations

import json
import os
import sqlite3
import time

from harness.system import (
    BATCH_CLAIM, LEASE_S, BatchedDrain, System, count_rows, read_pragmas,
)

JOBQ_MODULE = "jobq_core"
JOBQ_KIND = "noop"
JOBQ_CPU_KIND = "cpu"
JOBQ_CPU_LOOPS = 250_000    # pure-Python iterations: ~20 ms of CPU on a 2-vCPU VM
CPU_SLOTS = 2


def jobq_payload(i):
    return {"i": i}


def _jobq_noop(payload):
    """Returns nothing, so no result is stored: the harness reads which jobs ran from
    their payloads once the drain's clock has stopped."""


def _jobq_cpu(payload):
    x = 0
    for i in range(JOBQ_CPU_LOOPS):
        x += i * i % 7


def _jobq_registry():
    """The worker systems' handlers, at module level: the children of a process pool import
    this module by name (``harness.jobq:JOBQ_REGISTRY``, bench/ on their sys.path) and take
    the registry from here."""
    try:
        import importlib
        registry = importlib.import_module(JOBQ_MODULE).Registry()
    except Exception:
        return None
    registry.task(JOBQ_KIND)(_jobq_noop)
    registry.task(JOBQ_CPU_KIND)(_jobq_cpu)
    return registry


JOBQ_REGISTRY = _jobq_registry()


class JobqSystem(System):
    name = "jobq"
    kind = "project"
    supports_batch = True
    batch_note = "q.enqueue_many([(kind, payload), ...])"
    semantics = "the project (its adapter: harness/jobq.py)"

    def __init__(self, sync="NORMAL"):
        self.sync = sync
        if sync != "NORMAL":
            self.name = f"{self.name}-{sync}"
            if self.template_from:
                self.template_from = f"{self.template_from}-{sync}"

    def _mod(self):
        import importlib
        return importlib.import_module(JOBQ_MODULE)

    def available(self):
        try:
            self._mod()
            return True, ""
        except Exception as e:
            return False, f"import {JOBQ_MODULE} failed ({e!r}): jobq row skipped"

    def open(self, d):
        return self._mod().Queue(self.sqlite_file(d), synchronous=self.sync)

    def close(self, q):
        fn = getattr(q, "close", None)
        if callable(fn):
            fn()

    def enqueue(self, q, i):
        q.enqueue(JOBQ_KIND, jobq_payload(i))

    def enqueue_batch(self, q, ids):
        q.enqueue_many([(JOBQ_KIND, jobq_payload(i)) for i in ids])

    def open_worker(self, d, wid):
        return (self.open(d), f"w{wid}-{os.getpid()}")

    def claim(self, h):
        q, wname = h
        job = q.claim(wname, lease=LEASE_S)
        if job is None:
            return None
        return job.id, job

    def complete(self, h, job):
        try:
            h[0].complete(job.id, job.token)
        except self._mod().LeaseLost:
            return False
        return True

    def settings(self, q):
        conn = _find_connection(q)
        if conn is not None:
            return read_pragmas(conn)
        return {"note": "no sqlite3.Connection attribute found on Queue"}

    def left(self, d):
        return count_rows(self.sqlite_file(d),
                          "SELECT count(*) FROM jobq_jobs WHERE status IN ('pending', 'running')")


class JobqBatchSystem(BatchedDrain, JobqSystem):
    """jobq's API in a batched loop on one thread: ``claim_many`` of ``BATCH_CLAIM`` jobs,
    then, once they have run, ``complete_and_claim`` (their fenced completions and the
    next claim in one transaction), as the Worker's completer writes them. It is the
    engine without the Worker's threads: what any worker over it could reach, where
    raw-NORMAL-batch is the same loop over hand-written statements and a one-index
    table."""

    name = "jobq-batch"
    workloads = ("drain1", "drain4")
    template_from = "jobq"
    semantics = (f"jobq's API batched on one thread: claim_many({BATCH_CLAIM}), then "
                 "complete_and_claim (the batch's completions and the next claim in one "
                 "transaction)")

    def open_worker(self, d, wid):
        q, wname = super().open_worker(d, wid)
        return {"q": q, "name": wname, "claimed": [], "done": []}

    def close(self, h):
        super().close(h["q"] if isinstance(h, dict) else h)

    def _next_batch(self, h, done):
        q = h["q"]
        if done:
            accepted, jobs = q.complete_and_claim(
                [(job.id, job.token, None) for job in done], h["name"], BATCH_CLAIM,
                lease=LEASE_S)
            if not all(accepted):
                raise RuntimeError(f"{self.name}: {accepted.count(False)} completions "
                                   "fenced out")
        else:
            jobs = q.claim_many(h["name"], BATCH_CLAIM, lease=LEASE_S)
        return [(job.id, job) for job in jobs]


JOBQ_RAN = ("SELECT coalesce(payload, (SELECT p.payload FROM jobq_payloads p WHERE "
            "p.job_id=jobq_jobs.id)), attempts FROM jobq_jobs WHERE status='succeeded' "
            "AND worker=?")
"""The payloads of the jobs a worker ran to success, with their attempts (SQLite)."""


class JobqWorkerSystem(JobqSystem):
    """Drain through jobq's real worker runtime (Worker.run(burst=True), the default
    settings a user gets) instead of the adapter's claim/complete loop.

    The first claim() runs the whole burst; the following claims hand the keys of the jobs
    this process's worker completed to the harness one by one, so the drain's wall time covers the worker run.
    Handlers run where the pool runs them (in child processes for pool="process"), so the
    keys come from the database: each succeeded job's payload's i, once per attempt, so dup
    counts jobs whose handler ran more than once. The drain ends when ``run`` returns
    (``drained_at``): reading the keys back is verification, outside the clock."""

    name = "jobq-worker"
    pool = "thread"
    workloads = ("drain1", "drain4", "cpu2")
    template_from = "jobq"
    semantics = ("drain via jobq_core.Worker(queue, registry).run(burst=True) per process: "
                 "batch claim into free slots, batched completions, heartbeats; no-op handler; "
                 "cpu2: 2 slots, CPU-bound handler (~20 ms)")
    metric = None                   # set by measure_once before the drain processes fork

    def __init__(self, sync="NORMAL", pool="thread"):
        super().__init__(sync)
        if pool != "thread":
            self.pool = pool
            self.name = self.name.replace("jobq-worker", "jobq-worker-proc")
            self.semantics = self.semantics.replace("Worker(queue, registry)",
                                                    f"Worker(queue, registry, pool={pool!r})")
        if sync != "NORMAL":
            self.workloads = ("drain1", "drain4")

    def available(self):
        ok, note = super().available()
        if ok:  # the worker runtime loads on first use: load it before the drains fork,
            # as the peers' libraries are imported before theirs do
            self._mod().Worker  # noqa: B018
        return ok, note

    def prepare(self, d, n):
        """cpu2's own database: ``n`` CPU-bound jobs."""
        os.makedirs(d)
        q = self._mod().Queue(self.sqlite_file(d), synchronous=self.sync)
        try:
            q.enqueue_many([(JOBQ_CPU_KIND, jobq_payload(i)) for i in range(n)])
        finally:
            q.close()

    def open_worker(self, d, wid):
        return {"d": d, "ran": None}

    def claim(self, h):
        if h["ran"] is None:
            mod = self._mod()
            path = self.sqlite_file(h["d"])
            q = mod.Queue(path, synchronous=self.sync)
            slots = {"concurrency": CPU_SLOTS} if self.metric == "cpu2" else {}
            worker = mod.Worker(q, JOBQ_REGISTRY, pool=self.pool, **slots)
            try:
                worker.run(burst=True, handle_signals=False)
                h["ended"] = time.monotonic()
            finally:
                q.close()
            c = sqlite3.connect(path)
            try:
                rows = c.execute(JOBQ_RAN, (worker.id,)).fetchall()
            finally:
                c.close()
            h["ran"] = iter([json.loads(p)["i"] for p, attempts in rows
                             for _ in range(attempts)])
        key = next(h["ran"], None)
        return None if key is None else (key, key)

    def drained_at(self, h):
        return h.get("ended")

    def complete(self, h, ctx):
        return True


def _find_connection(obj, depth=3):  # Queue -> store -> backend -> connection
    if isinstance(obj, sqlite3.Connection):
        return obj
    if depth == 0:
        return None
    for v in list(getattr(obj, "__dict__", {}).values()):
        found = _find_connection(v, depth - 1) if not isinstance(v, (str, bytes, int, float)) else None
        if found is not None:
            return found
    return None
