"""store_instructions.py - instructions per job of the store's hot paths, under callgrind.

Wall-clock rates on a shared two-core machine drift by 10 % from run to run; instruction
counts do not. Each workload runs once with N jobs and once with none, in a fresh
process under ``valgrind --tool=callgrind``; the difference divided by N is the cost of
one job (interpreter start, imports and opening the database cancel out).

    python bench/store_instructions.py                      # this checkout, SQLite
    python bench/store_instructions.py --python A/.venv/bin/python --python B/.venv/bin/python
    python bench/store_instructions.py --pg-url postgresql://postgres@127.0.0.1/postgres

With ``--pg-url`` the workloads run on PostgreSQL, each on a database of its own created
from that server's URL (the user must be allowed to create databases); the count is the
client's alone (the server is another process), which is what jobq's code costs there.

Workloads (SQLite file in a temporary directory, FakeClock, no-op payloads):
  enqueue   Queue.enqueue, one job per call
  batch     Queue.enqueue_many, 500 jobs per call
  drain     Queue.claim + Queue.complete, one job at a time
  drain8    Queue.claim_many(8) + Queue.complete_and_claim, as a worker's loop does
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

WORKLOADS = ("enqueue", "batch", "drain", "drain8")

_CHILD = r"""
import sys, tempfile, os
from jobq_core import Queue
from jobq_core.testing import FakeClock
workload, n, url = sys.argv[1], int(sys.argv[2]), sys.argv[3]
q = Queue(url or os.path.join(tempfile.mkdtemp(), "jobs.db"), clock=FakeClock())
if workload in ("drain", "drain8"):
    for start in range(0, n, 500):
        q.enqueue_many([("k", None)] * min(500, n - start))
if workload == "enqueue":
    for _ in range(n):
        q.enqueue("k", None)
elif workload == "batch":
    for start in range(0, n, 500):
        q.enqueue_many([("k", None)] * min(500, n - start))
elif workload == "drain":
    while (job := q.claim("w")) is not None:
        q.complete(job.id, job.token)
elif workload == "drain8":
    jobs = q.claim_many("w", 8)
    while jobs:
        done = [(j.id, j.token, None) for j in jobs]
        jobs = q.complete_and_claim(done, "w", 8)[1]
q.close()
"""


def instructions(python: str, workload: str, n: int, pg_url: str | None = None) -> int:
    if pg_url:
        import psycopg
        from urllib.parse import urlsplit, urlunsplit

        name = f"jobq_bench_{os.getpid()}_{workload}_{n}"
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
            admin.execute(f'CREATE DATABASE "{name}"')
        url = urlunsplit(urlsplit(pg_url)._replace(path=f"/{name}"))
        try:
            return _count(python, workload, n, url)
        finally:
            with psycopg.connect(pg_url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return _count(python, workload, n, "")


def _count(python: str, workload: str, n: int, url: str) -> int:
    python, _, src = python.partition("::")  # --src: this interpreter on that checkout
    env = {**os.environ, "PYTHONHASHSEED": "0", **({"PYTHONPATH": src} if src else {})}
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.out",
             python, "-c", _CHILD, workload, str(n), url],
            capture_output=True, text=True, check=True, cwd=tmp, env=env)
    return int(re.search(r"Collected : (\d+)", out.stderr).group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", action="append",
                        help="an interpreter whose jobq to measure (repeatable; default: this one)")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--only", default=",".join(WORKLOADS))
    parser.add_argument("--pg-url", help="run on this PostgreSQL server instead of SQLite")
    parser.add_argument("--src", action="append",
                        help="a checkout to measure with this interpreter (its PYTHONPATH; "
                             "repeatable, instead of --python)")
    args = parser.parse_args()
    pythons = args.python or ([f"{sys.executable}::{src}" for src in args.src] if args.src
                               else [sys.executable])
    names = [os.path.basename(p.partition("::")[2].rstrip("/")) or
             os.path.basename(os.path.dirname(os.path.dirname(os.path.dirname(p)))) or p
             for p in pythons]
    print(f"{'workload':<10}" + "".join(f"{name:>16}" for name in names)
          + "   (each against the first)")
    for workload in args.only.split(","):
        row = []
        for python in pythons:
            full = instructions(python, workload, args.jobs, args.pg_url)
            empty = instructions(python, workload, 0, args.pg_url)
            row.append((full - empty) / args.jobs)
        print(f"{workload:<10}" + "".join(
            f"{x:>16,.0f}" if i == 0 else f"{x:>9,.0f} {x / row[0]:.3f}x"
            for i, x in enumerate(row)), flush=True)


if __name__ == "__main__":
    main()
