"""harness.py - what bench/peers.py (SQLite), bench/peers_pg.py (PostgreSQL) and
bench/peers_brokers.py (Redis and RabbitMQ) share: the System interface every measured
queue implements, jobq's adapter (its API and its worker, on either store), the workloads
(enqueue, batch, drain1, drain4, cpu2) and their checks, rounds, medians, the table, and
the command line the scripts run (``main``).

peers_pg.py and peers_brokers.py import only this module; peers.py imports it and their
systems, for its one run of every section.
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
import shutil
import sqlite3
import statistics
import sys
import tempfile
import textwrap
import threading
import time
import traceback

LEASE_S = 30.0
SYNC_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
METRICS = ("enqueue", "batch", "drain1", "drain4", "cpu2")
SECTIONS = ("sqlite", "pg", "brokers")


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
    workloads = METRICS[:4]
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

    def drained_at(self, h):
        """For a worker with no burst mode, which the harness stops once every job has run:
        the time.monotonic() at which the last job finished, where the drain ends. None:
        the drain ends when claim() returns None."""
        return None

    # Where a measurement's database lives: the harness names it by a directory ``d``.
    section = "sqlite"          # which table the system's row goes to
    baseline = "raw-NORMAL"     # its section's anchor: every ratio is to it
    promises = ""               # lease? fencing? (printed under the table)

    def create(self, d):
        os.makedirs(d)

    def copy_from(self, src, d):
        shutil.copytree(src, d)

    def discard(self, d):
        shutil.rmtree(d, ignore_errors=True)

    def after_enqueue(self, d):
        checkpoint_and_close(self.sqlite_file(d))



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
JOBQ_CPU_KIND = "cpu"
JOBQ_CPU_LOOPS = 250_000    # pure-Python iterations: ~20 ms of CPU on a 2-vCPU VM
CPU_SLOTS = 2


BATCH_CLAIM = 8  # the raw-*-batch anchors: jobs per claim statement (jobq's default concurrency)


class BatchedDrain:
    """The drain of a batching worker, for the raw-*-batch anchors: up to ``BATCH_CLAIM``
    jobs claimed by one statement, and their fenced completions written together just
    before the next claim. A subclass's worker handle is a dict with ``claimed`` and
    ``done`` lists; it gives ``_claim_batch(h) -> [(payload JSON text, ctx), ...]`` and
    ``_complete_batch(h, ctxs) -> how many were accepted``."""

    name: str

    def claim(self, h):
        if not h["claimed"]:
            self._flush(h)
            h["claimed"] = [(json.loads(p)["i"], ctx) for p, ctx in self._claim_batch(h)]
            if not h["claimed"]:
                return None
        return h["claimed"].pop(0)

    def complete(self, h, ctx):
        h["done"].append(ctx)
        return True  # written with the next claim; _flush checks every one was accepted

    def _flush(self, h):
        done, h["done"] = h["done"], []
        if done and (n := self._complete_batch(h, done)) != len(done):
            raise RuntimeError(f"{self.name}: {len(done) - n} completions fenced out")


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
    this script again by path and take the registry from here."""
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
    semantics = "the project (adapter section in harness.py)"

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
# ===================  end of jobq ADAPTER  ================================


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
               t_end=S.drained_at(h) or time.monotonic())


def _worker_main(S, d, wid, nthreads, start_evt, msgq):
    try:
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
    procs = [ctx.Process(target=_worker_main, args=(S, d, w, nthreads, start_evt, msgq), daemon=True)
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
    S.after_enqueue(d)
    return {"wall_s": wall, "jobs_per_s": n / wall}, settings


# --------------------------------------------------------------------------
# rounds, summaries, the table
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
        S.create(d)
        out, st = run_enqueue(S, d, n, args.batch_size if metric == "batch" else None)
        settings.setdefault(S.name, st)
        if keep:
            templates[S.name] = d
        return out
    S.metric = metric
    if metric == "cpu2":
        S.prepare(d, args.cpu_n)
        return run_drain(S, d, 1, 0, args.cpu_n, args.drain_timeout)
    src = templates.get(S.template_from or S.name)
    if src is None:
        return {"error": "no enqueued template (enqueue failed)"}
    S.copy_from(src, d)
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
            S.discard(d)
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
    for dist in ("huey", "litequeue", "persist-queue", "psycopg", "procrastinate", "pgqueuer",
                 "celery", "kombu", "redis", "rq", "dramatiq", "pika"):
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


def _pool_ratios(rounds):
    """{metric: median over rounds of jobq-worker-proc's rate / jobq-worker's}."""
    out = {}
    for metric in ("drain1", "drain4", "cpu2"):
        ratios = []
        for rd in rounds:
            p, t = rd.get("jobq-worker-proc", {}).get(metric), rd.get("jobq-worker", {}).get(metric)
            if p and t and p.get("jobs_per_s") and t.get("jobs_per_s"):
                ratios.append(p["jobs_per_s"] / t["jobs_per_s"])
        if ratios:
            out[metric] = statistics.median(ratios)
    return out


def run_section(systems, baseline, args, n, root, run_t0, label):
    """Every round of one section (one store): its systems' results per round, the
    settings read back, and the disk probes."""
    rounds = []              # rounds[r][system][metric] = result dict
    settings = {}
    fsyncs = [fsync_probe(root)]
    for r in range(args.repeat):
        order = systems[r % len(systems):] + systems[:r % len(systems)]
        res = {s.name: {} for s in systems}
        templates = {}
        rdir = os.path.join(root, f"{label}-r{r}")
        os.makedirs(rdir)

        def log(msg):
            print(f"[{time.monotonic() - run_t0:6.1f}s {label} r{r + 1}] {msg}", file=sys.stderr,
                  flush=True)

        try:
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
                        log(f"{metric:8s} {S.name:21s} ERROR {out['error'][-1500:]}")
                    else:
                        extra = ""
                        if metric.startswith("drain"):
                            extra = (f"  dup={out['duplicates']} lost={out['lost']} "
                                     f"left={out['db_left']} errs={out['errors']}")
                        reps = out["reps_jobs_per_s"]
                        rs = f" median of {len(reps)}" if len(reps) > 1 else ""
                        log(f"{metric:8s} {S.name:21s} {out['jobs_per_s']:>10,.0f} jobs/s "
                            f"({out['wall_s']:.2f}s{rs}){extra}")
        finally:
            by_name = {s.name: s for s in systems}
            for name, d in templates.items():
                by_name[name].discard(d)
        # ratios to the baseline measured in this round
        for s in systems:
            for metric in METRICS:
                m = res[s.name].get(metric)
                b = res.get(baseline, {}).get(metric)
                if m and b and "jobs_per_s" in m and "jobs_per_s" in b and b["jobs_per_s"]:
                    m["ratio"] = m["jobs_per_s"] / b["jobs_per_s"]
                f = res.get("raw-FULL", {}).get(metric)
                if m and f and "jobs_per_s" in m and "jobs_per_s" in f and f["jobs_per_s"]:
                    m["ratio_to_raw_FULL"] = m["jobs_per_s"] / f["jobs_per_s"]
        rounds.append(res)
        shutil.rmtree(rdir, ignore_errors=True)
        fsyncs.append(fsync_probe(root))
    return rounds, settings, fsyncs


def summarise(systems, rounds):
    """Per system and workload: the medians over rounds, the worst dup/lost/errors."""
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
    return summary


def _hanging(name, text, width=100):
    """``  name  text``, the text wrapped under itself."""
    return textwrap.fill(text, width=width, initial_indent=f"  {name:22s} ",
                         subsequent_indent=" " * 25)


def table(systems, summary, rounds, baseline, args, n):
    w = max([18] + [len(s.name) for s in systems])
    hdr = (f"{'system':{w}s} {'enqueue/s':>10s} {'x':>5s} {'batch/s':>10s} {'x':>5s} "
           f"{'drain1/s':>9s} {'x':>5s} {'drain{0}/s'.format(args.workers):>9s} {'x':>5s} "
           f"{'cpu2/s':>7s} {'dup':>7s} {'lost':>5s} {'errs':>5s}")
    lines = [f"N={n} jobs, batch={args.batch_size}, drain workers={args.workers}, rounds={args.repeat}, "
             f"x = ratio to {baseline} measured in the same round (median over rounds)", hdr,
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
        lines.append(f"{s.name:{w}s} {cols[0]:>10s} {cols[1]:>5s} {cols[2]:>10s} {cols[3]:>5s} "
                     f"{cols[4]:>9s} {cols[5]:>5s} {cols[6]:>9s} {cols[7]:>5s} "
                     f"{cols[8]:>7s} {j(dup):>7s} {j(lost):>5s} {j(errs):>5s}")
    pools = _pool_ratios(rounds)
    if pools:
        lines.append("jobq's process pool against its thread pool (jobq-worker-proc / jobq-worker, "
                     "median of the rounds' ratios): "
                     + ", ".join(f"{m} {fmt_ratio(x)}x" for m, x in pools.items()))
    lines.append("dup/lost/errs are drain1/drain4 (worst round).")
    return lines


def main(argv, *, description, registry, sections="sqlite,pg", pg=None, brokers=None):
    """The command line of peers.py, peers_pg.py and peers_brokers.py: measure
    ``registry``'s systems (name -> System) of the chosen sections and print the tables.
    ``pg`` and ``brokers``: those sections' modules, when the run has them; each has a
    ``header()`` (the line above its table and the servers' settings) and a PROMISES_TITLE,
    and takes its servers' URLs (``use_server``, ``use_servers``) before anything forks."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--n", type=int, default=20000, help="jobs per workload (default 20000)")
    ap.add_argument("--pg-n", type=int, default=10000,
                    help="jobs per workload in the PostgreSQL section (default 10000)")
    ap.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres",
                    help="the PostgreSQL server of that section (a database it may create "
                         "and drop databases from)")
    ap.add_argument("--brokers-n", type=int, default=2000,
                    help="jobs per workload in the brokers section (default 2000: RQ's "
                         "workers drain a few dozen jobs a second)")
    ap.add_argument("--redis-url", default="redis://127.0.0.1:6379/13",
                    help="the Redis database of the brokers section (flushed before and after "
                         "each measurement; refused if it holds keys the bench did not write)")
    ap.add_argument("--amqp-url", default="amqp://guest:guest@127.0.0.1:5672/%2F",
                    help="the RabbitMQ server of the brokers section (its queues are named "
                         "after each measurement and deleted after it)")
    ap.add_argument("--sections", default=sections,
                    help=f"which tables to measure, a comma list of {', '.join(SECTIONS)} "
                         f"(default: {sections})")
    ap.add_argument("--batch-size", type=int, default=1000, help="jobs per batch call (default 1000)")
    ap.add_argument("--cpu-n", type=int, default=200,
                    help="CPU-bound jobs of the cpu2 workload (default 200)")
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
    if pg is not None:
        pg.use_server(args.pg_url)
    if brokers is not None:
        brokers.use_servers(args.redis_url, args.amqp_url)
    modules = {"pg": pg, "brokers": brokers}

    if args.list:
        for s in registry.values():
            ok, note = s.available()
            print(f"{s.section:7s} {s.name:22s} {'ok' if ok else 'SKIP: ' + note}")
        return 0

    sections = [x.strip() for x in args.sections.split(",") if x.strip()]
    for x in sections:
        if x not in SECTIONS:
            ap.error(f"unknown section {x!r}; known: {', '.join(SECTIONS)}")
    wanted = [x.strip() for x in args.systems.split(",") if x.strip()] or [
        name for name, s in registry.items() if s.section in sections]
    for w in wanted:
        if w not in registry:
            ap.error(f"unknown system {w!r}; known: {', '.join(registry)}")
    for baseline in dict.fromkeys(registry[w].baseline for w in list(wanted)):
        if baseline not in wanted:
            wanted.insert(0, baseline)          # ratios need the baseline

    skipped, systems = {}, []
    for name in wanted:
        ok, note = registry[name].available()
        if ok:
            systems.append(registry[name])
        else:
            skipped[name] = note
            print(f"note: {name} skipped - {note}", file=sys.stderr)
    names = [s.name for s in systems]
    for s in list(systems):
        if s.template_from and s.template_from not in names:
            skipped[s.name] = f"needs {s.template_from} in the same run"
            systems.remove(s)

    run_t0 = time.monotonic()
    root = tempfile.mkdtemp(prefix="jobq-peers-", dir=args.tmpdir)
    results = {}
    lines = []
    try:
        for section in SECTIONS:
            members = [s for s in systems if s.section == section]
            if not members:
                continue
            baseline = members[0].baseline
            if baseline not in [s.name for s in members]:
                for s in members:
                    skipped[s.name] = f"its baseline {baseline} cannot run"
                continue
            n = {"pg": args.pg_n, "brokers": args.brokers_n}.get(section, args.n)
            rounds, settings, fsyncs = run_section(members, baseline, args, n, root, run_t0,
                                                   section)
            summary = summarise(members, rounds)
            part = table(members, summary, rounds, baseline, args, n)
            if section == "sqlite":
                part.append("persist-queue/thr = drain4 with threads in one process.")
                part.append("")
                part.append("durability settings as read back from each library's own connection:")
                for s in members:
                    st = settings.get(s.name) or settings.get(s.template_from or "", {})
                    if st:
                        part.append(f"  {s.name:18s} journal_mode={st.get('journal_mode')} "
                                    f"synchronous={st.get('synchronous')} "
                                    f"busy_timeout={st.get('busy_timeout_ms')}ms")
                part.append("disk probe (4 KiB write+fsync, start/after each round): "
                            + ", ".join(f"{x:,.0f}/s" for x in fsyncs))
            else:
                mod = modules[section]
                head, server = mod.header()
                part.insert(0, head)
                part += ["", "settings:"]
                part += [_hanging(s.name, s.semantics) for s in members if s.semantics]
                part += ["", mod.PROMISES_TITLE]
                part += [_hanging(s.name, s.promises) for s in members if s.promises]
                results[f"{section}_server"] = server
            lines += part + [""]
            results[section] = {
                "n": n, "baseline": baseline, "fsync_per_s": fsyncs, "rounds": rounds,
                "systems": {s.name: {"kind": s.kind, "semantics": s.semantics,
                                     "promises": s.promises, "batch_note": s.batch_note,
                                     "settings": settings.get(s.name),
                                     "summary": summary[s.name]} for s in members},
            }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    total_s = time.monotonic() - run_t0
    for name, note in skipped.items():
        lines.append(f"skipped: {name}: {note}")
    lines.append(f"total run time: {total_s:.1f}s")
    print("\n".join(lines))

    if args.json:
        out = {
            "meta": {
                "n": args.n, "pg_n": args.pg_n, "batch_size": args.batch_size,
                "workers": args.workers, "repeat": args.repeat, "cpu_count": os.cpu_count(),
                "platform": platform.platform(), "versions": versions(),
                "started_unix": time.time() - total_s, "total_s": total_s,
            },
            "sections": results,
            "skipped": skipped,
            "process_pool_ratios": _pool_ratios(results.get("sqlite", {}).get("rounds", [])),
            "table": lines,
        }
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
        print(f"wrote {args.json}", file=sys.stderr)
    return 0

