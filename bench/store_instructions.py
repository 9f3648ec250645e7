"""store_instructions.py - instructions per job of the store's hot paths, under callgrind.

Wall-clock rates on a shared two-core machine drift by 10 % from run to run; instruction
counts do not. Each workload runs once with N jobs and once with none, in a fresh
process under ``valgrind --tool=callgrind``; the difference divided by N is the cost of
one job (interpreter start, imports and opening the database cancel out).

    python bench/store_instructions.py                      # this checkout, SQLite
    python bench/store_instructions.py --python A/.venv/bin/python --python B/.venv/bin/python

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
workload, n = sys.argv[1], int(sys.argv[2])
q = Queue(os.path.join(tempfile.mkdtemp(), "jobs.db"), clock=FakeClock())
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


def instructions(python: str, workload: str, n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.out",
             python, "-c", _CHILD, workload, str(n)],
            capture_output=True, text=True, check=True, cwd=tmp,
            env={**os.environ, "PYTHONHASHSEED": "0"})
    return int(re.search(r"Collected : (\d+)", out.stderr).group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", action="append",
                        help="an interpreter whose jobq to measure (repeatable; default: this one)")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--only", default=",".join(WORKLOADS))
    args = parser.parse_args()
    pythons = args.python or [sys.executable]
    print(f"{'workload':<10}" + "".join(f"{os.path.basename(os.path.dirname(os.path.dirname(os.path.dirname(p)))) or p:>16}" for p in pythons))
    for workload in args.only.split(","):
        row = []
        for python in pythons:
            full = instructions(python, workload, args.jobs)
            empty = instructions(python, workload, 0)
            row.append((full - empty) / args.jobs)
        ratio = f"   {row[-1] / row[0]:.3f}x" if len(row) > 1 else ""
        print(f"{workload:<10}" + "".join(f"{x:>16,.0f}" for x in row) + ratio, flush=True)


if __name__ == "__main__":
    main()
