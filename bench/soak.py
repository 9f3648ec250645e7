#!/usr/bin/env python3
"""soak.py - jobq as it runs in production, for many minutes, on SQLite and PostgreSQL.

A producer enqueues at a fixed rate (--rate jobs/s), batched as a web app's requests
would be: every --tick seconds the jobs of that tick in one enqueue_many. --workers
processes each run a Worker (its defaults, a no-op handler that notes when it started).
Finished jobs older than --keep seconds are pruned every --prune-every seconds, as a cron
job would (0: never). Three phases, one row a minute:

  steady    --minutes (default 10)
  held      --hold-minutes (default 5) with a session held open: on PostgreSQL idle in
            transaction with a transaction id (vacuum cannot remove a row version deleted
            after it began), on SQLite a read transaction (the WAL cannot be checkpointed
            past it)
  released  --after-minutes (default 2) once it is closed: what the queue does then

Each row: jobs enqueued and started that minute (jobs/s), the pickup latency of the jobs
started that minute (from the producer's enqueue_many returning, its commit done, to the
handler's start; p50/p95/p99 ms), the backlog, the sizes of jobq's tables and indexes,
and on PostgreSQL jobq_jobs's dead tuples, autovacuum runs and the oldest transaction's
xmin age. At the end the issue's targets are checked on the steady phase: p99 <= 50 ms
each minute, the last minute's p99 within 1.5x the first's, and the total size levelling
off (growth over the last third of the phase under 10 %).

Usage:
  python bench/soak.py --store sqlite --rate 500 --minutes 10 --hold-minutes 5
  python bench/soak.py --store pg --pg-url postgresql://postgres@127.0.0.1/postgres
  python bench/soak.py --store pg --own-cluster --autovacuum off
--store both runs SQLite then PostgreSQL. The PostgreSQL URL must name a user that may
create databases; --own-cluster starts a cluster with initdb/pg_ctl instead, with
--autovacuum on|off (on a shared server --autovacuum off turns it off for jobq's tables).
"""
from __future__ import annotations

import argparse
import collections
import json
import multiprocessing as mp
import os
import queue as queue_mod
import statistics
import sys
import threading
import time

from soak_stores import PgStore, SqliteStore

P99_TARGET_MS = 50.0
DRIFT_TARGET = 1.5
GROWTH_TARGET = 0.10


def _worker_main(url: str, stop, out) -> None:
    """One worker process: a Worker with its defaults; its handler notes (batch, start)."""
    from jobq_core import Queue, Registry, Worker

    started: collections.deque = collections.deque()
    registry = Registry()

    @registry.task("soak")
    def soak(payload):
        started.append((payload["b"], time.time()))

    def flush():
        chunk = []
        while started:
            chunk.append(started.popleft())
        if chunk:
            out.put(chunk)

    with Queue(url) as q:
        worker = Worker(q, registry)

        def stopper():
            while not stop.wait(0.5):
                flush()
            worker.stop()

        threading.Thread(target=stopper, daemon=True).start()
        worker.run(handle_signals=False)
    flush()


def percentile(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


class Soak:
    def __init__(self, store, args):
        self.store, self.args = store, args
        self.commits: dict[int, float] = {}    # batch -> time its enqueue_many returned
        self.starts: list[tuple[int, float]] = []
        self.enqueued: list[tuple[float, int]] = []
        self.rows: list[dict] = []

    def run(self) -> dict:
        a = self.args
        setting = self.store.prepare()
        print(f"\n== {self.store.name}: {a.rate} jobs/s in batches every {a.tick}s, "
              f"{a.workers} worker process(es); {setting}", flush=True)
        ctx = mp.get_context("fork")
        stop, out = ctx.Event(), ctx.Queue()
        procs = [ctx.Process(target=_worker_main, args=(self.store.url, stop, out), daemon=True)
                 for _ in range(a.workers)]
        for p in procs:
            p.start()
        halt = threading.Event()
        threading.Thread(target=self._collect, args=(out, halt), daemon=True).start()
        if a.prune_every > 0:
            threading.Thread(target=self._prune, args=(halt,), daemon=True).start()
        phases = ([("steady", a.minutes), ("held", a.hold_minutes), ("released", a.after_minutes)])
        from jobq_core import Queue
        self.t0 = time.time()
        print(self._header(), flush=True)
        try:
            with Queue(self.store.url) as q:
                minute = 0
                for phase, minutes in phases:
                    if minutes <= 0:
                        continue
                    if phase == "held":
                        self.store.hold()
                    if phase == "released":
                        self.store.release()
                    for _ in range(minutes):
                        self._produce(q, self.t0 + 60 * (minute + 1))
                        sample = self.store.sample()
                        backlog = q.count("pending")
                        self.rows.append({"minute": minute + 1, "phase": phase,
                                          "backlog": backlog, **sample})
                        minute += 1
                self.store.release()
                time.sleep(2.0)                  # the last minute's starts arrive
        finally:
            stop.set()
            for p in procs:
                p.join(timeout=60)
            halt.set()
        self._latencies()
        for row in self.rows:
            print(self._line(row), flush=True)
        return {"store": self.store.name, "setting": setting, "rows": self.rows,
                "targets": self._targets()}

    def _produce(self, q, until: float) -> None:
        """Batches every tick until ``until``; behind schedule, it catches up at once."""
        per_tick = self.args.rate * self.args.tick
        owed = 0.0
        next_t = time.time()
        while next_t < until:
            delay = next_t - time.time()
            if delay > 0:
                time.sleep(delay)
            owed += per_tick
            n, owed = int(owed), owed - int(owed)
            if n:
                b = len(self.commits)
                q.enqueue_many([("soak", {"b": b})] * n)
                now = time.time()
                self.commits[b] = now
                self.enqueued.append((now, n))
            next_t += self.args.tick

    def _collect(self, out, halt) -> None:
        while not halt.is_set():
            try:
                self.starts.extend(out.get(timeout=0.5))
            except queue_mod.Empty:
                pass

    def _prune(self, halt) -> None:
        from jobq_core import Queue
        with Queue(self.store.url) as q:
            while not halt.wait(self.args.prune_every):
                q.prune(self.args.keep)

    def _latencies(self) -> None:
        by_minute: dict[int, list[float]] = collections.defaultdict(list)
        for b, t in self.starts:
            by_minute[int((t - self.t0) // 60) + 1].append((t - self.commits[b]) * 1000)
        enq: dict[int, int] = collections.Counter()
        for t, n in self.enqueued:
            enq[int((t - self.t0) // 60) + 1] += n
        for row in self.rows:
            lat = by_minute.get(row["minute"], [])
            row.update(enqueued_per_s=enq[row["minute"]] / 60, started_per_s=len(lat) / 60,
                       p50_ms=percentile(lat, 50), p95_ms=percentile(lat, 95),
                       p99_ms=percentile(lat, 99), max_ms=max(lat) if lat else None)
        row_started = sum(len(v) for v in by_minute.values())
        self.total = {"enqueued": sum(n for _, n in self.enqueued), "started": row_started}

    def _header(self) -> str:
        pg = self.store.name == "postgresql"
        return ("min phase     enq/s start/s  p50ms  p95ms  p99ms backlog  total  heap index"
                + ("  dead_tup autovac xmin_age" if pg else "    wal  free") + "   (MiB)")

    def _line(self, r: dict) -> str:
        def ms(x):
            return "    -" if x is None else f"{x:6.1f}"
        s = (f"{r['minute']:3d} {r['phase']:8s} {r.get('enqueued_per_s', 0):6.0f} "
             f"{r.get('started_per_s', 0):7.0f} {ms(r.get('p50_ms'))} {ms(r.get('p95_ms'))} "
             f"{ms(r.get('p99_ms'))} {r['backlog']:7d} {r['total_mib']:6.1f} {r['heap_mib']:5.1f} "
             f"{r['index_mib']:5.1f}")
        if "dead_tup" in r:
            return s + f" {r['dead_tup'] or 0:9d} {r['autovacuum_count'] or 0:7d} {r['oldest_xmin_age'] or 0:8d}"
        return s + f" {r['wal_mib']:6.1f} {r['free_mib']:5.1f}"

    def _targets(self) -> dict:
        steady = [r for r in self.rows if r["phase"] == "steady"]
        p99s = [r["p99_ms"] for r in steady if r.get("p99_ms") is not None]
        out = {"total": self.total}
        if not p99s:
            return out
        out["p99_max_ms"] = max(p99s)
        out["p99_within_50ms"] = max(p99s) <= P99_TARGET_MS
        out["p99_last_over_first"] = p99s[-1] / p99s[0] if p99s[0] else None
        out["p99_steady"] = out["p99_last_over_first"] is not None and \
            out["p99_last_over_first"] <= DRIFT_TARGET
        third = steady[-max(1, len(steady) // 3) - 1:]
        if len(third) >= 2 and third[0]["total_mib"]:
            growth = third[-1]["total_mib"] / third[0]["total_mib"] - 1
            out["size_growth_last_third"] = growth
            out["size_levels_off"] = growth < GROWTH_TARGET
        out["rate_kept"] = statistics.median(r["started_per_s"] for r in steady) >= \
            0.95 * self.args.rate
        return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", choices=("sqlite", "pg", "both"), default="both")
    ap.add_argument("--rate", type=int, default=500, help="jobs enqueued a second (default 500)")
    ap.add_argument("--tick", type=float, default=0.1,
                    help="seconds between the producer's batches (default 0.1)")
    ap.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--minutes", type=int, default=10, help="steady phase (default 10)")
    ap.add_argument("--hold-minutes", type=int, default=5,
                    help="phase with a session held open (default 5; 0: none)")
    ap.add_argument("--after-minutes", type=int, default=2,
                    help="phase after the session closes (default 2)")
    ap.add_argument("--prune-every", type=float, default=60.0,
                    help="prune finished jobs every S seconds (default 60; 0: never)")
    ap.add_argument("--keep", type=float, default=60.0,
                    help="finished jobs younger than this many seconds are kept (default 60)")
    ap.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres",
                    help="a PostgreSQL server where the soak may create and drop a database")
    ap.add_argument("--own-cluster", action="store_true",
                    help="start a PostgreSQL cluster of its own (initdb/pg_ctl) instead")
    ap.add_argument("--autovacuum", choices=("server", "on", "off"), default="server",
                    help="server: as configured; with --own-cluster the cluster's setting, "
                         "else 'off' turns it off for jobq's tables")
    ap.add_argument("--db-dir", default=None, help="where the SQLite file goes (default: temp)")
    ap.add_argument("--json", default="soak.json", help="results as JSON (default soak.json)")
    args = ap.parse_args(argv)
    if args.own_cluster and args.autovacuum == "server":
        args.autovacuum = "on"
    results = {"args": vars(args), "runs": []}
    for name in (("sqlite", "pg") if args.store == "both" else (args.store,)):
        store = SqliteStore(args.db_dir) if name == "sqlite" else \
            PgStore(args.pg_url, args.autovacuum, args.own_cluster)
        try:
            run = Soak(store, args).run()
        finally:
            store.close()
        results["runs"].append(run)
        print(f"targets ({store.name}): {json.dumps(run['targets'])}", flush=True)
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1, default=float)
    print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
