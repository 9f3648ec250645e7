"""Does reusing one C JSON encoder (``new_jobs._one_encoder``) pay? An A/B in one run.

    python bench/encode_ab.py [--jobs 20000] [--rounds 7] [--dir DIR] [--json out.json]
    python bench/encode_ab.py --instructions   # needs valgrind; about a minute

``encode_json`` encodes every payload and result. ``json.JSONEncoder.encode`` builds a new
C encoder on each call; ``new_jobs`` builds one once, through CPython's private
``json.encoder.c_make_encoder``. This script measures jobq with each, alternating within
one run (the order flips every round, so drift in the machine's load falls on both
alike), on fresh SQLite databases (synchronous=NORMAL, in a temporary directory):

  encode       encode_json alone on the workload's payloads (no database)
  enqueue_many the payloads through Queue.enqueue_many, 1,000 per call
  enqueue      Queue.enqueue, one transaction per job (a tenth of --jobs)

``--instructions`` counts instead of timing (the machine's load cannot move a count):
each variant's enqueue_many (and enqueue) of 1,000 and of 6,000 jobs under ``valgrind
--tool=callgrind``; the difference over 5,000 is the instructions per job, startup
excluded.

Payloads: ``{"i": i}`` (what ``jobq bench`` enqueues) and a 12-field order-like dict.
Prints the median seconds per variant and the ratio plain/reused (above 1: the reused
encoder is faster). The variant "plain" is ``new_jobs._JSON.encode``, the public
``json.JSONEncoder`` with the same options.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from jobq_core import Queue
from jobq_core.api import new_jobs

BATCH = 1000


def small(i: int) -> dict:
    return {"i": i}


def order(i: int) -> dict:
    return {"order_id": f"ORD-{i:08d}", "customer": i % 9973, "email": f"user{i}@example.com",
            "amount_cents": 1999 + i % 500, "currency": "EUR", "items": [i % 7, i % 11, i % 13],
            "express": i % 3 == 0, "note": None, "country": "DE", "zip": f"{10000 + i % 89999}",
            "coupon": "WINTER" if i % 5 == 0 else None, "attempt": 1}


PAYLOADS = {"small": small, "order": order}
VARIANTS = {"reused": new_jobs._encode, "plain": new_jobs._JSON.encode}


def timed_encode(payloads: list) -> float:
    encode = new_jobs.encode_json
    t0 = time.perf_counter()
    for p in payloads:
        encode(p)
    return time.perf_counter() - t0


def timed_enqueue_many(db: str, payloads: list) -> float:
    with Queue(db) as q:
        t0 = time.perf_counter()
        for first in range(0, len(payloads), BATCH):
            q.enqueue_many([("noop", p) for p in payloads[first:first + BATCH]])
        return time.perf_counter() - t0


def timed_enqueue(db: str, payloads: list) -> float:
    with Queue(db) as q:
        t0 = time.perf_counter()
        for p in payloads:
            q.enqueue("noop", p)
        return time.perf_counter() - t0


def count_one(variant: str, payload: str, how: str, n: int, db: str) -> None:
    """What one callgrind run executes: ``n`` jobs through ``how`` (enqueue_many, enqueue)."""
    new_jobs._encode = VARIANTS[variant]
    timed = timed_enqueue_many if how == "enqueue_many" else timed_enqueue
    timed(db, [PAYLOADS[payload](i) for i in range(n)])


def instructions(low: int = 1000, high: int = 6000) -> int:
    """Instructions per job of each variant's enqueue_many, from two callgrind runs each."""
    print(f"{'workload':22s} {'reused':>9s} {'plain':>9s} {'plain/reused':>13s}  "
          "(instructions per job)")
    with tempfile.TemporaryDirectory(prefix="jobq-encode-ab-") as tmp:
        for payload in PAYLOADS:
            for how in ("enqueue_many", "enqueue"):
                per_job = {}
                for variant in VARIANTS:
                    total = {}
                    for n in (low, high):
                        name = f"{payload}-{how}-{variant}-{n}"
                        out = os.path.join(tmp, f"{name}.callgrind")
                        subprocess.run(
                            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                             sys.executable, __file__, "--count-one", variant, payload, how,
                             str(n), os.path.join(tmp, f"{name}.db")],
                            check=True, capture_output=True)
                        total[n] = _callgrind_total(out)
                    per_job[variant] = (total[high] - total[low]) / (high - low)
                reused, plain = per_job["reused"], per_job["plain"]
                print(f"{payload + ' ' + how:22s} {reused:9,.0f} {plain:9,.0f} "
                      f"{plain / reused:13.3f}", flush=True)
    return 0


def _callgrind_total(path: str) -> int:
    with open(path) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"no instruction total in {path}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--count-one"]:
        count_one(argv[1], argv[2], argv[3], int(argv[4]), argv[5])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=20000, help="payloads per measurement")
    ap.add_argument("--rounds", type=int, default=7, help="alternating rounds; medians kept")
    ap.add_argument("--json", default=None, help="write the samples and medians here")
    ap.add_argument("--dir", default=None,
                    help="where the databases go (default: the system's temporary directory)")
    ap.add_argument("--instructions", action="store_true",
                    help="count instructions per job under callgrind instead of timing")
    args = ap.parse_args(argv)
    if VARIANTS["reused"] is VARIANTS["plain"]:
        print("this Python has no C JSON accelerator: nothing to compare", file=sys.stderr)
        return 1
    if args.instructions:
        return instructions()
    samples: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="jobq-encode-ab-", dir=args.dir) as tmp:
        for r in range(args.rounds):
            order_ = list(VARIANTS) if r % 2 == 0 else list(VARIANTS)[::-1]
            for pname, make in PAYLOADS.items():
                payloads = [make(i) for i in range(args.jobs)]
                few = payloads[:max(1, args.jobs // 10)]
                for variant in order_:
                    new_jobs._encode = VARIANTS[variant]
                    try:
                        db = os.path.join(tmp, f"{pname}-{variant}-{r}")
                        runs = {"encode": timed_encode(payloads),
                                "enqueue_many": timed_enqueue_many(db + "-many.db", payloads),
                                "enqueue": timed_enqueue(db + "-one.db", few)}
                    finally:
                        new_jobs._encode = VARIANTS["reused"]
                    for what, seconds in runs.items():
                        samples.setdefault(f"{pname} {what}", {}).setdefault(variant, []).append(
                            seconds)
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    result = {}
    print(f"{'workload':22s} {'reused s':>9s} {'plain s':>9s} {'plain/reused':>13s}")
    for key, by_variant in samples.items():
        reused, plain = (statistics.median(by_variant[v]) for v in ("reused", "plain"))
        result[key] = {"reused_s": reused, "plain_s": plain, "ratio": plain / reused,
                       "samples": by_variant}
        print(f"{key:22s} {reused:9.4f} {plain:9.4f} {plain / reused:13.3f}")
    print(f"(median of {args.rounds} alternating rounds, {args.jobs:,} payloads; enqueue: "
          f"{max(1, args.jobs // 10):,}; Python {sys.version.split()[0]})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"jobs": args.jobs, "rounds": args.rounds, "python": sys.version,
                       "results": result}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
