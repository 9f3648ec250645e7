#!/usr/bin/env python3
"""peers.py - throughput anchors for jobq (a job queue on SQLite/WAL).

Measures, for every system, on a fresh temporary database each time:

  enqueue   N jobs one at a time, one transaction each (as a web request would)
  batch     N jobs through the system's batch API (n/a where it has none)
  drain1    N pre-enqueued no-op jobs claimed + completed by 1 worker process
  drain4    the same with W worker processes (default 4), each with its own
            connection; every completion is counted per job, so duplicates
            (a job completed twice) and losses (never completed) are reported

Systems:
  raw-NORMAL / raw-FULL  jobq's claim and complete statements hand-written on
                         the stdlib sqlite3 module, WAL, synchronous=NORMAL or
                         FULL, partial index on pending jobs: the physical-limit
                         anchor for this design on this disk.  Every ratio in
                         the table is "system / raw-NORMAL in the same round".
  huey                   SqliteHuey (SqliteStorage), library defaults
  litequeue              LiteQueue, library defaults
  persist-queue          SQLiteAckQueue, library defaults
  persist-queue/thr      drain4 only: W threads sharing one SQLiteAckQueue
                         (multithreading=True) - the multi-worker setup that
                         persist-queue's own docs show
  jobq                   the project, through the adapter section below,
                         only when `import jobq_core` succeeds

The machine this runs on is shared and noisy: absolute numbers move between
runs, ratios measured in one run are what count.  Workloads run
workload-major (all systems' enqueue, then all systems' batch, ...) so that
the numbers that get divided were measured close together in time;
--repeat R runs R rounds (rotating the system order) and reports medians.

Usage:  python peers.py [--n 20000] [--workers 4] [--repeat 1] [--json out.json]
"""
from __future__ import annotations

import argparse
import collections
import importlib.metadata
import json
import multiprocessing as mp
import os
import platform
import queue as queue_mod
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import traceback

LEASE_S = 30.0
SYNC_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
METRICS = ("enqueue", "batch", "drain1", "drain4")


class RanButFailed(Exception):
    """complete() ran the job but a later step failed: count the completion, do not retry."""


COMPLETE_TRIES = 3      # a completion that fails on a lock error is retried (it is idempotent)


def payload_text(i: int) -> str:
    return json.dumps({"i": i})


def read_pragmas(conn) -> dict:
    """journal_mode / synchronous / busy_timeout as seen on a library's own connection."""
    out = {}
    for p in ("journal_mode", "synchronous", "busy_timeout"):
        try:
            v = conn.execute(f"PRAGMA {p}").fetchone()[0]
        except Exception as e:  # pragma: no cover - defensive
            v = f"? ({e})"
        if p == "synchronous":
            v = SYNC_NAMES.get(v, v)
        out[p if p != "busy_timeout" else "busy_timeout_ms"] = v
    return out


def count_rows(db_file: str, sql: str):
    """Read-only count on a finished database (end-state cross-check)."""
    try:
        c = sqlite3.connect(db_file, timeout=30.0)
        try:
            return c.execute(sql).fetchone()[0]
        finally:
            c.close()
    except Exception:
        return None


def checkpoint_and_close(db_file: str):
    """Fold the WAL into the main file so a template can be copied as plain files."""
    try:
        c = sqlite3.connect(db_file, timeout=30.0)
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        c.close()
    except Exception:
        pass


class System:
    """Adapter interface. One instance per system, looked up by name in forked workers."""

    name = "?"
    kind = "peer"               # raw | peer | project
    workloads = METRICS
    template_from = None        # reuse another system's enqueued DB for the drains
    thread_workers = False      # drain4 with threads in one process instead of processes
    supports_batch = False
    batch_note = "no batch API"
    semantics = ""

    def available(self):
        return True, ""

    def sqlite_file(self, d):
        return os.path.join(d, "q.db")

    def open(self, d):
        raise NotImplementedError

    def close(self, h):
        pass

    def enqueue(self, h, i):
        raise NotImplementedError

    def enqueue_batch(self, h, ids):
        raise NotImplementedError

    def open_worker(self, d, wid):
        return self.open(d)

    def open_shared(self, d):
        return self.open(d)

    def claim(self, h):
        """-> None when nothing is claimable, else (key, ctx). key identifies the job."""
        raise NotImplementedError

    def complete(self, h, ctx) -> bool:
        raise NotImplementedError

    def settings(self, h) -> dict:
        return {}

    def left(self, d):
        """Jobs not in a finished state according to the database after a drain."""
        return None


# --------------------------------------------------------------------------
# raw SQLite: jobq's own statements, hand-written (the physical-limit anchor)
# --------------------------------------------------------------------------
RAW_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs(
  id          INTEGER PRIMARY KEY,
  kind        TEXT    NOT NULL,
  payload     TEXT    NOT NULL,
  status      TEXT    NOT NULL DEFAULT 'pending',
  priority    INTEGER NOT NULL DEFAULT 0,
  run_at      REAL    NOT NULL,
  attempts    INTEGER NOT NULL DEFAULT 0,
  lease_until REAL,
  worker      TEXT,
  token       INTEGER,
  created_at  REAL    NOT NULL,
  started_at  REAL,
  finished_at REAL
);
CREATE INDEX IF NOT EXISTS jobs_pending
  ON jobs(priority DESC, run_at, id) WHERE status = 'pending';
"""
RAW_INSERT = ("INSERT INTO jobs(kind, payload, status, priority, run_at, attempts, created_at) "
              "VALUES ('noop', ?, 'pending', 0, ?, 0, ?)")
RAW_CLAIM = ("UPDATE jobs SET status='running', attempts=attempts+1, lease_until=?, worker=?, "
             "token=?, started_at=? "
             "WHERE id=(SELECT id FROM jobs WHERE status='pending' AND run_at<=? "
             "ORDER BY priority DESC, run_at ASC, id ASC LIMIT 1) "
             "RETURNING id, payload, token")
RAW_COMPLETE = ("UPDATE jobs SET status='succeeded', finished_at=?, lease_until=NULL "
                "WHERE id=? AND status='running' AND token=?")


class RawSQLite(System):
    kind = "raw"
    supports_batch = True
    batch_note = "BEGIN IMMEDIATE; executemany(INSERT); COMMIT"
    semantics = ("claim = one UPDATE..RETURNING (autocommit), complete = UPDATE guarded by "
                 "status='running' AND token (fencing)")

    def __init__(self, sync):
        self.sync = sync
        self.name = f"raw-{sync}"

    def _connect(self, d):
        c = sqlite3.connect(self.sqlite_file(d), isolation_level=None, timeout=30.0)
        c.execute("PRAGMA journal_mode=WAL")
        c.execute(f"PRAGMA synchronous={self.sync}")
        return c

    def open(self, d):
        c = self._connect(d)
        c.executescript(RAW_SCHEMA)
        return c

    def close(self, h):
        (h[0] if isinstance(h, tuple) else h).close()

    def enqueue(self, c, i):
        now = time.time()
        c.execute(RAW_INSERT, (payload_text(i), now, now))

    def enqueue_batch(self, c, ids):
        now = time.time()
        c.execute("BEGIN IMMEDIATE")
        try:
            c.executemany(RAW_INSERT, [(payload_text(i), now, now) for i in ids])
        except BaseException:
            c.execute("ROLLBACK")
            raise
        c.execute("COMMIT")

    def open_worker(self, d, wid):
        rng = random.Random(os.urandom(16))
        return (self._connect(d), f"w{wid}-{os.getpid()}", rng)

    def claim(self, h):
        c, wname, rng = h
        now = time.time()
        rows = c.execute(RAW_CLAIM, (now + LEASE_S, wname, rng.getrandbits(62), now, now)).fetchall()
        if not rows:
            return None
        jid, payload, token = rows[0]
        return json.loads(payload)["i"], (jid, token)

    def complete(self, h, ctx):
        c = h[0]
        jid, token = ctx
        return c.execute(RAW_COMPLETE, (time.time(), jid, token)).rowcount == 1

    def settings(self, c):
        s = read_pragmas(c)
        plan = c.execute("EXPLAIN QUERY PLAN " + RAW_CLAIM, (0, "", 0, 0, 0)).fetchall()
        s["claim_plan"] = " | ".join(r[-1] for r in plan)
        return s

    def left(self, d):
        return count_rows(self.sqlite_file(d), "SELECT count(*) FROM jobs WHERE status != 'succeeded'")


# --------------------------------------------------------------------------
# huey: SqliteHuey / SqliteStorage
# --------------------------------------------------------------------------
_HUEY_RAN = []


def _huey_noop(i):
    _HUEY_RAN.append(i)


class HueySystem(System):
    name = "huey"
    batch_note = "no batch API (task.map() enqueues one transaction per task)"
    semantics = ("dequeue = BEGIN EXCLUSIVE; SELECT; DELETE (delete-on-dequeue, no ack/lease: "
                 "a crash mid-task loses it); execute() also does a revoke-key check + a "
                 "BEGIN EXCLUSIVE delete on the kv table per task.  Workers run the body of "
                 "huey.consumer.Worker.loop (huey.dequeue() + huey.execute(task)) as "
                 "`huey_consumer -k process -w W` does per process, without its idle back-off")

    def available(self):
        try:
            import huey  # noqa: F401
            return True, ""
        except Exception as e:
            return False, f"import huey failed: {e!r}"

    def open(self, d):
        from huey import SqliteHuey
        h = SqliteHuey("bench", filename=self.sqlite_file(d))   # library defaults
        task = h.task(name="noop")(_huey_noop)
        return (h, task)

    def close(self, h):
        h[0].storage.close()

    def enqueue(self, h, i):
        h[1](i)

    def claim(self, h):
        task = h[0].dequeue()
        if task is None:
            return None
        return task.args[0], task

    def complete(self, h, task):
        n0 = len(_HUEY_RAN)
        try:
            h[0].execute(task)
        except sqlite3.Error as e:
            if len(_HUEY_RAN) > n0:          # task body ran; retrying would run it again
                raise RanButFailed(str(e))
            raise
        return len(_HUEY_RAN) > n0

    def settings(self, h):
        s = read_pragmas(h[0].storage.conn)
        s["library_knobs"] = ("SqliteStorage(journal_mode='wal', fsync=None -> synchronous not "
                              "set, SQLite default; timeout=5, cache_mb=8)")
        return s

    def left(self, d):
        return count_rows(self.sqlite_file(d), "SELECT count(*) FROM task")


# --------------------------------------------------------------------------
# litequeue: LiteQueue
# --------------------------------------------------------------------------
class LiteQueueSystem(System):
    name = "litequeue"
    batch_note = "no batch API (put() only)"
    semantics = ("pop = BEGIN IMMEDIATE; UPDATE..RETURNING (status READY->LOCKED); done() = "
                 "unguarded UPDATE by message_id; no lease expiry/fencing.  The pop query "
                 "uses the status index then sorts all READY rows by message_id (TEMP B-TREE), "
                 "so a pop costs O(backlog)")

    def available(self):
        try:
            import litequeue  # noqa: F401
            return True, ""
        except Exception as e:
            return False, f"import litequeue failed: {e!r}"

    def open(self, d):
        from litequeue import LiteQueue
        return LiteQueue(self.sqlite_file(d))      # library defaults

    def close(self, q):
        q.close()

    def enqueue(self, q, i):
        q.put(payload_text(i))

    def claim(self, q):
        m = q.pop()
        if m is None:
            return None
        return json.loads(m.data)["i"], m.message_id

    def complete(self, q, mid):
        q.done(mid)
        return True

    def settings(self, q):
        s = read_pragmas(q.conn)
        s["library_knobs"] = ("LiteQueue sets journal_mode=WAL, synchronous=NORMAL, "
                              "temp_store=MEMORY, cache_size=-256000 on every connection; "
                              "sqlite3.connect default timeout=5")
        return s

    def left(self, d):
        return count_rows(self.sqlite_file(d), "SELECT count(*) FROM [Queue] WHERE status != 2")


# --------------------------------------------------------------------------
# persist-queue: SQLiteAckQueue
# --------------------------------------------------------------------------
class PersistQueueSystem(System):
    name = "persist-queue"
    batch_note = "no batch API for SQLiteAckQueue (auto_commit=False is rejected)"
    semantics = ("get = SELECT next status<2 row, then a separate UPDATE status=unack by id "
                 "(not atomic across processes; serialised only by a per-object thread lock); "
                 "ack = UPDATE status=acked.  The SELECT walks the rowid order past every "
                 "acked row, so a get costs O(acked rows) until clear_acked_data() is called.  "
                 "Constructing a queue (auto_resume=True) resets ALL unack rows to ready")

    def __init__(self, threads=False):
        if threads:
            self.name = "persist-queue/thr"
            self.workloads = ("drain4",)
            self.template_from = "persist-queue"
            self.thread_workers = True
            self.semantics = ("drain4 only: W threads share ONE SQLiteAckQueue("
                              "multithreading=True) in one process - the setup shown in "
                              "persist-queue's docs")
        self._threads = threads

    def available(self):
        try:
            import persistqueue  # noqa: F401
            from persistqueue import SQLiteAckQueue  # noqa: F401
            return True, ""
        except Exception as e:
            return False, f"import persistqueue failed: {e!r}"

    def qdir(self, d):
        return os.path.join(d, "pq")

    def sqlite_file(self, d):
        return os.path.join(self.qdir(d), "data.db")

    def open(self, d):
        from persistqueue import SQLiteAckQueue
        return SQLiteAckQueue(self.qdir(d))         # library defaults

    def open_shared(self, d):
        from persistqueue import SQLiteAckQueue
        return SQLiteAckQueue(self.qdir(d), multithreading=True)

    def close(self, q):
        q.close()

    def enqueue(self, q, i):
        q.put({"i": i})

    def claim(self, q):
        from persistqueue.exceptions import Empty
        try:
            item = q.get(block=False)
        except Empty:
            return None
        return item["i"], item

    def complete(self, q, item):
        return q.ack(item) is not None

    def settings(self, q):
        s = read_pragmas(q._putter)
        s["library_knobs"] = ("SQLiteAckQueue sets only journal_mode=WAL; synchronous not set "
                              "(SQLite default); sqlite3 timeout=10; pickle serializer")
        return s

    def left(self, d):
        return count_rows(self.sqlite_file(d),
                          "SELECT count(*) FROM ack_queue_default WHERE status != 5")


# ==========================================================================
# ===================  jobq ADAPTER - UPDATE HERE  =========================
# Written against the ASSUMED jobq_core API:
#   q = jobq_core.Queue(path)
#   q.enqueue(kind, payload) -> id
#   q.enqueue_many([(kind, payload), ...])
#   job = q.claim(worker_id, lease=30.0)   -> None | object with .id, .token
#   q.complete(job.id, job.token)          -> raises jobq_core.LeaseLost when fenced out
# If the real API differs, change only this section.  Jobs are identified
# by job.id for the exactly-once check.
# ==========================================================================
JOBQ_MODULE = "jobq_core"
JOBQ_KIND = "noop"


def jobq_payload(i):
    return {"i": i}


class JobqSystem(System):
    name = "jobq"
    kind = "project"
    supports_batch = True
    batch_note = "q.enqueue_many([(kind, payload), ...])"
    semantics = "the project (adapter section in peers.py)"

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
        return self._mod().Queue(self.sqlite_file(d))

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


class JobqWorkerSystem(JobqSystem):
    """Drain through jobq's real worker runtime (Worker.run(burst=True), no-op handler,
    the default settings a user gets) instead of the adapter's claim/complete loop.

    The first claim() runs the whole burst, recording each handler call; the following
    claims hand those keys to the harness one by one, so the drain's wall time covers the
    worker run and dup counts handlers that ran more than once."""

    name = "jobq-worker"
    workloads = ("drain1", "drain4")
    template_from = "jobq"
    semantics = ("drain via jobq_core.Worker(queue, registry).run(burst=True) per process: "
                 "batch claim into free slots, batched completions, heartbeats; no-op handler")

    def open_worker(self, d, wid):
        return {"d": d, "ran": None}

    def claim(self, h):
        if h["ran"] is None:
            mod = self._mod()
            ran = []
            registry = mod.Registry()
            registry.task(JOBQ_KIND)(lambda payload: ran.append(payload["i"]))
            q = mod.Queue(self.sqlite_file(h["d"]))
            try:
                mod.Worker(q, registry).run(burst=True, handle_signals=False)
            finally:
                q.close()
            h["ran"] = iter(ran)
        key = next(h["ran"], None)
        return None if key is None else (key, key)

    def complete(self, h, ctx):
        return True


def _find_connection(obj, depth=2):
    if isinstance(obj, sqlite3.Connection):
        return obj
    if depth == 0:
        return None
    for v in list(getattr(obj, "__dict__", {}).values()):
        found = _find_connection(v, depth - 1) if not isinstance(v, (str, bytes, int, float)) else None
        if found is not None:
            return found
    return None
# ===================  end of jobq ADAPTER  ================================


def build_registry():
    systems = [RawSQLite("NORMAL"), RawSQLite("FULL"), HueySystem(), LiteQueueSystem(),
               PersistQueueSystem(), PersistQueueSystem(threads=True), JobqSystem(),
               JobqWorkerSystem()]
    return {s.name: s for s in systems}


REGISTRY = build_registry()
BASELINE = "raw-NORMAL"


# --------------------------------------------------------------------------
# drain workers (forked; every worker opens its own connection)
# --------------------------------------------------------------------------
def _drain_loop(S, h, out):
    keys, errors, msgs, fenced, ack_failed = [], 0, [], 0, 0
    while True:
        try:
            job = S.claim(h)
        except sqlite3.Error as e:
            errors += 1
            if len(msgs) < 5:
                msgs.append(f"claim: {e}")
            if errors > 1000:
                break
            continue
        if job is None:
            break
        key, ctx = job
        ok = None                       # None = every try raised (job stays claimed)
        for _ in range(COMPLETE_TRIES):
            try:
                ok = S.complete(h, ctx)
                break
            except RanButFailed as e:
                errors += 1
                if len(msgs) < 5:
                    msgs.append(f"after run: {e}")
                ok = True
                break
            except sqlite3.Error as e:
                errors += 1
                if len(msgs) < 5:
                    msgs.append(f"complete: {e}")
        if ok:
            keys.append(key)
        elif ok is None:
            ack_failed += 1
        else:
            fenced += 1
    out.update(keys=keys, errors=errors, msgs=msgs, fenced=fenced, ack_failed=ack_failed,
               t_end=time.monotonic())


def _worker_main(sysname, d, wid, nthreads, start_evt, msgq):
    try:
        S = REGISTRY[sysname]
        if nthreads:
            shared = S.open_shared(d)
            handles = [shared] * nthreads
        else:
            handles = [S.open_worker(d, wid)]
        msgq.put(("ready", wid))
        start_evt.wait()
        outs = [dict() for _ in handles]
        if nthreads:
            ts = [threading.Thread(target=_drain_loop, args=(S, h, o)) for h, o in zip(handles, outs)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        else:
            _drain_loop(S, handles[0], outs[0])
        for k, o in enumerate(outs):
            msgq.put(("done", f"{wid}.{k}", o))
    except BaseException:
        msgq.put(("fail", wid, traceback.format_exc()))


def run_drain(S, d, nproc, nthreads, n_expected, timeout):
    ctx = mp.get_context("fork")
    start_evt = ctx.Event()
    msgq = ctx.Queue()
    procs = [ctx.Process(target=_worker_main, args=(S.name, d, w, nthreads, start_evt, msgq), daemon=True)
             for w in range(nproc)]
    for p in procs:
        p.start()
    expected_done = nproc * (nthreads or 1)
    ready, done, fails = 0, [], []
    deadline = time.monotonic() + 60
    while ready + len(fails) < nproc:
        try:
            m = msgq.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue_mod.Empty:
            fails.append("workers not ready within 60 s")
            break
        if m[0] == "ready":
            ready += 1
        elif m[0] == "fail":
            fails.append(m[2])
    t0 = time.monotonic()
    start_evt.set()
    deadline = t0 + timeout
    timed_out = False
    while not fails and len(done) < expected_done:
        try:
            m = msgq.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue_mod.Empty:
            timed_out = True
            break
        if m[0] == "done":
            done.append(m[2])
        elif m[0] == "fail":
            fails.append(m[2])
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.terminate()
            p.join()
    if fails or timed_out:
        return {"error": ("timeout after %ss" % timeout) if timed_out else fails[0][-2000:]}
    wall = max(o["t_end"] for o in done) - t0
    counts = collections.Counter(k for o in done for k in o["keys"])
    completions = sum(counts.values())
    distinct = len(counts)
    dup = sum(c - 1 for c in counts.values() if c > 1)
    if S.kind == "project":          # keys are job ids: only distinctness is checkable
        unexpected = 0
        lost = n_expected - distinct
    else:                            # keys are the payload's sequence number 0..N-1
        unexpected = sum(1 for k in counts if not (isinstance(k, int) and 0 <= k < n_expected))
        lost = n_expected - (distinct - unexpected)
    return {
        "wall_s": wall,
        "jobs_per_s": distinct / wall if wall > 0 else None,
        "completions": completions,
        "distinct": distinct,
        "duplicates": dup,
        "lost": lost,
        "unexpected_keys": unexpected,
        "fenced": sum(o["fenced"] for o in done),
        "ack_failed": sum(o["ack_failed"] for o in done),
        "errors": sum(o["errors"] for o in done),
        "error_msgs": [m for o in done for m in o["msgs"]][:5],
        "per_worker": [len(o["keys"]) for o in done],
        "db_left": S.left(d),
    }


# --------------------------------------------------------------------------
# enqueue workloads (in this process)
# --------------------------------------------------------------------------
def run_enqueue(S, d, n, batch_size=None):
    h = S.open(d)
    settings = None
    try:
        try:
            settings = S.settings(h)
        except Exception as e:
            settings = {"error": repr(e)}
        t0 = time.perf_counter()
        if batch_size is None:
            for i in range(n):
                S.enqueue(h, i)
        else:
            for lo in range(0, n, batch_size):
                S.enqueue_batch(h, range(lo, min(n, lo + batch_size)))
        wall = time.perf_counter() - t0
    finally:
        S.close(h)
    checkpoint_and_close(S.sqlite_file(d))
    return {"wall_s": wall, "jobs_per_s": n / wall}, settings


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------
def fsync_probe(directory, seconds=0.3):
    """4 KiB write + fsync per iteration: the disk's commit-rate ceiling for synchronous=FULL."""
    fd, p = tempfile.mkstemp(dir=directory)
    try:
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            os.write(fd, b"x" * 4096)
            os.fsync(fd)
            n += 1
        return n / (time.perf_counter() - t0)
    finally:
        os.close(fd)
        os.unlink(p)


def measure_once(S, metric, d, templates, settings, n, args, keep):
    if metric in ("enqueue", "batch"):
        os.makedirs(d)
        out, st = run_enqueue(S, d, n, args.batch_size if metric == "batch" else None)
        settings.setdefault(S.name, st)
        if keep:
            templates[S.name] = d
        return out
    src = templates.get(S.template_from or S.name)
    if src is None:
        return {"error": "no enqueued template (enqueue failed)"}
    shutil.copytree(src, d)
    if S.thread_workers:
        return run_drain(S, d, 1, args.workers, n, args.drain_timeout)
    nproc = 1 if metric == "drain1" else args.workers
    return run_drain(S, d, nproc, 0, n, args.drain_timeout)


def measure(S, metric, rdir, templates, settings, n, args):
    """One workload for one system; repeated on fresh databases while the
    accumulated time is under --min-time (at most --max-reps), median kept.
    dup/lost/errors are the worst over the repetitions."""
    outs = []
    spent = 0.0
    while True:
        k = len(outs)
        d = os.path.join(rdir, f"{S.name.replace('/', '_')}-{metric}-{k}")
        keep = metric == "enqueue" and k == 0          # first enqueue DB = drain template
        try:
            out = measure_once(S, metric, d, templates, settings, n, args, keep)
        except Exception as e:
            out = {"error": f"{type(e).__name__}: {e}"}
        if not keep:
            shutil.rmtree(d, ignore_errors=True)
        if "error" in out:
            return out
        outs.append(out)
        spent += out["wall_s"]
        if spent >= args.min_time or len(outs) >= args.max_reps:
            break
    rates = [o["jobs_per_s"] for o in outs]
    best = sorted(outs, key=lambda o: o["jobs_per_s"])[(len(outs) - 1) // 2]
    res = dict(best)
    res["jobs_per_s"] = statistics.median(rates)
    res["reps_jobs_per_s"] = rates
    for key in ("duplicates", "lost", "errors", "fenced", "ack_failed", "unexpected_keys"):
        if key in best:
            res[key] = max(o.get(key, 0) for o in outs)
    if "error_msgs" in best:
        res["error_msgs"] = [m for o in outs for m in o.get("error_msgs", [])][:5]
    return res


def versions():
    v = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for dist in ("huey", "litequeue", "persist-queue"):
        try:
            v[dist] = importlib.metadata.version(dist)
        except Exception:
            v[dist] = None
    try:
        v["jobq_core"] = importlib.metadata.version("jobq_core")
    except Exception:
        v["jobq_core"] = None
    return v


def fmt_rate(x):
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    return f"{x:,.0f}"


def fmt_ratio(x):
    return "" if x is None else f"{x:.2f}"


def median_or_none(xs):
    xs = [x for x in xs if isinstance(x, (int, float))]
    return statistics.median(xs) if xs else None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20000, help="jobs per workload (default 20000)")
    ap.add_argument("--batch-size", type=int, default=1000, help="jobs per batch call (default 1000)")
    ap.add_argument("--workers", type=int, default=4, help="worker processes for drain4 (default 4)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds; medians are reported (default 1)")
    ap.add_argument("--systems", default="", help="comma list (default: all available); --list shows names")
    ap.add_argument("--list", action="store_true", help="list systems and exit")
    ap.add_argument("--min-time", type=float, default=1.0,
                    help="repeat a measurement (fresh DB each time) until it has run this long (default 1.0 s)")
    ap.add_argument("--max-reps", type=int, default=5, help="cap on those repetitions (default 5)")
    ap.add_argument("--drain-timeout", type=float, default=300.0, help="seconds before a drain is abandoned")
    ap.add_argument("--tmpdir", default=None, help="where the temporary databases go (default: system temp dir)")
    ap.add_argument("--json", default=None, help="write results as JSON to this path")
    args = ap.parse_args(argv)

    if args.list:
        for s in REGISTRY.values():
            ok, note = s.available()
            print(f"{s.name:20s} {'ok' if ok else 'SKIP: ' + note}")
        return 0

    wanted = [x.strip() for x in args.systems.split(",") if x.strip()] or list(REGISTRY)
    for w in wanted:
        if w not in REGISTRY:
            ap.error(f"unknown system {w!r}; known: {', '.join(REGISTRY)}")
    if BASELINE not in wanted:
        wanted.insert(0, BASELINE)          # ratios need the baseline

    skipped, systems = {}, []
    for name in wanted:
        ok, note = REGISTRY[name].available()
        if ok:
            systems.append(REGISTRY[name])
        else:
            skipped[name] = note
            print(f"note: {name} skipped - {note}", file=sys.stderr)
    names = [s.name for s in systems]
    for s in list(systems):
        if s.template_from and s.template_from not in names:
            skipped[s.name] = f"needs {s.template_from} in the same run"
            systems.remove(s)

    n = args.n
    run_t0 = time.monotonic()
    root = tempfile.mkdtemp(prefix="jobq-peers-", dir=args.tmpdir)
    fsyncs = [fsync_probe(root)]
    rounds = []              # rounds[r][system][metric] = result dict
    settings = {}
    try:
        for r in range(args.repeat):
            order = systems[r % len(systems):] + systems[:r % len(systems)]
            res = {s.name: {} for s in systems}
            templates = {}
            rdir = os.path.join(root, f"r{r}")
            os.makedirs(rdir)

            def log(msg):
                print(f"[{time.monotonic() - run_t0:6.1f}s r{r + 1}] {msg}", file=sys.stderr, flush=True)

            for metric in METRICS:
                for S in order:
                    if metric not in S.workloads:
                        continue
                    if metric == "batch" and not S.supports_batch:
                        res[S.name][metric] = {"na": S.batch_note}
                        continue
                    out = measure(S, metric, rdir, templates, settings, n, args)
                    res[S.name][metric] = out
                    if "error" in out:
                        log(f"{metric:8s} {S.name:18s} ERROR {out['error'][:300]}")
                    else:
                        extra = ""
                        if metric.startswith("drain"):
                            extra = (f"  dup={out['duplicates']} lost={out['lost']} "
                                     f"left={out['db_left']} errs={out['errors']}")
                        reps = out["reps_jobs_per_s"]
                        rs = f" median of {len(reps)}" if len(reps) > 1 else ""
                        log(f"{metric:8s} {S.name:18s} {out['jobs_per_s']:>10,.0f} jobs/s "
                            f"({out['wall_s']:.2f}s{rs}){extra}")
            # ratios to the baseline measured in this round
            for s in systems:
                for metric in METRICS:
                    m = res[s.name].get(metric)
                    b = res.get(BASELINE, {}).get(metric)
                    if m and b and "jobs_per_s" in m and "jobs_per_s" in b and b["jobs_per_s"]:
                        m["ratio"] = m["jobs_per_s"] / b["jobs_per_s"]
                    f = res.get("raw-FULL", {}).get(metric)
                    if m and f and "jobs_per_s" in m and "jobs_per_s" in f and f["jobs_per_s"]:
                        m["ratio_to_raw_FULL"] = m["jobs_per_s"] / f["jobs_per_s"]
            rounds.append(res)
            shutil.rmtree(rdir, ignore_errors=True)
            fsyncs.append(fsync_probe(root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    total_s = time.monotonic() - run_t0

    # ---- summarise (medians over rounds) ----
    summary = {}
    for s in systems:
        row = {}
        for metric in METRICS:
            cells = [rd[s.name].get(metric) for rd in rounds if rd[s.name].get(metric)]
            if not cells:
                row[metric] = {"na": "not run for this system"}
                continue
            if all("na" in c for c in cells):
                row[metric] = {"na": cells[0]["na"]}
                continue
            errs = [c["error"] for c in cells if "error" in c]
            row[metric] = {
                "jobs_per_s": median_or_none([c.get("jobs_per_s") for c in cells]),
                "ratio": median_or_none([c.get("ratio") for c in cells]),
                "ratio_to_raw_FULL": median_or_none([c.get("ratio_to_raw_FULL") for c in cells]),
            }
            if errs:
                row[metric]["errors_text"] = errs[:2]
            if metric.startswith("drain"):
                for k in ("duplicates", "lost", "fenced", "ack_failed", "errors", "unexpected_keys"):
                    row[metric][k] = max([c.get(k, 0) for c in cells if k in c], default=None)
                row[metric]["db_left"] = [c.get("db_left") for c in cells]
                row[metric]["error_msgs"] = [m for c in cells for m in c.get("error_msgs", [])][:5]
        summary[s.name] = row

    # ---- table ----
    hdr = (f"{'system':18s} {'enqueue/s':>10s} {'x':>5s} {'batch/s':>10s} {'x':>5s} "
           f"{'drain1/s':>9s} {'x':>5s} {'drain{0}/s'.format(args.workers):>9s} {'x':>5s} "
           f"{'dup':>7s} {'lost':>5s} {'errs':>5s}")
    lines = [f"N={n} jobs, batch={args.batch_size}, drain workers={args.workers}, rounds={args.repeat}, "
             f"x = ratio to {BASELINE} measured in the same round (median over rounds)", hdr,
             "-" * len(hdr)]
    for s in systems:
        row = summary[s.name]
        cols = []
        for metric in METRICS:
            c = row[metric]
            if "na" in c:
                cols += ["n/a", ""]
            elif c.get("jobs_per_s") is None:
                cols += ["ERROR", ""]
            else:
                cols += [fmt_rate(c["jobs_per_s"]), fmt_ratio(c.get("ratio"))]
        dup = [row[m].get("duplicates") for m in ("drain1", "drain4") if "na" not in row[m]]
        lost = [row[m].get("lost") for m in ("drain1", "drain4") if "na" not in row[m]]
        errs = [row[m].get("errors") for m in ("drain1", "drain4") if "na" not in row[m]]

        def j(xs):
            xs = [("?" if x is None else str(x)) for x in xs]
            return "/".join(xs) if xs else "-"
        lines.append(f"{s.name:18s} {cols[0]:>10s} {cols[1]:>5s} {cols[2]:>10s} {cols[3]:>5s} "
                     f"{cols[4]:>9s} {cols[5]:>5s} {cols[6]:>9s} {cols[7]:>5s} "
                     f"{j(dup):>7s} {j(lost):>5s} {j(errs):>5s}")
    lines.append("dup/lost/errs are drain1/drain4 (worst round).  persist-queue/thr = drain4 with "
                 "threads in one process.")
    lines.append("")
    lines.append("durability settings as read back from each library's own connection:")
    for s in systems:
        st = settings.get(s.name) or settings.get(s.template_from or "", {})
        if st:
            lines.append(f"  {s.name:18s} journal_mode={st.get('journal_mode')} "
                         f"synchronous={st.get('synchronous')} busy_timeout={st.get('busy_timeout_ms')}ms")
    for name, note in skipped.items():
        lines.append(f"skipped: {name}: {note}")
    lines.append(f"disk probe (4 KiB write+fsync, start/after each round): "
                 + ", ".join(f"{x:,.0f}/s" for x in fsyncs))
    lines.append(f"total run time: {total_s:.1f}s")
    print("\n".join(lines))

    if args.json:
        out = {
            "meta": {
                "n": n, "batch_size": args.batch_size, "workers": args.workers,
                "repeat": args.repeat, "baseline": BASELINE, "cpu_count": os.cpu_count(),
                "platform": platform.platform(), "versions": versions(),
                "started_unix": time.time() - total_s, "total_s": total_s,
                "fsync_per_s": fsyncs,
            },
            "systems": {s.name: {"kind": s.kind, "semantics": s.semantics,
                                 "batch_note": s.batch_note,
                                 "settings": settings.get(s.name),
                                 "summary": summary[s.name]} for s in systems},
            "skipped": skipped,
            "rounds": rounds,
            "table": lines,
        }
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
