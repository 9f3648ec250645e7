"""complete_statement.py - a batch's completions on SQLite: one statement, or one a job?

Instructions per job (callgrind, N claimed jobs minus none, each run in a fresh process) of
writing the fenced completions of 8 claimed jobs a transaction (BEGIN IMMEDIATE ... COMMIT)
on a jobq SQLite file, in two ways:

- ``each``: jobq's ``COMPLETE`` (``store/sql.py``) once a job, as the store writes them;
- ``one``: one ``UPDATE ... FROM (VALUES (id, token, result), ...) ... RETURNING id`` for
  the 8, with the same fence.

    python bench/complete_statement.py [--jobs 2000]
"""
from __future__ import annotations

import argparse
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time

BATCH = 8
ONE = ("UPDATE jobq_jobs SET status='succeeded', result=v.column3, finished_at=?, "
       "lease_until=NULL, cancel_requested=false FROM (VALUES {}) AS v "
       "WHERE {} AND NOT has_dependents RETURNING jobq_jobs.id")


def child(way: str, n: int) -> None:
    from jobq_core import Queue
    from jobq_core.store import sql

    path = os.path.join(tempfile.mkdtemp(prefix="jobq-complete-"), "jobs.db")
    q = Queue(path)
    q.enqueue_many([("k", None)] * max(n, 1))
    jobs = []
    while got := q.claim_many("w", 64):
        jobs += got
    q.close()
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA synchronous=NORMAL")
    fence = sql.fence("jobq_jobs", "v.column1", "v.column2")

    def instrument(state: str) -> None:
        subprocess.run(["callgrind_control", "--instr=" + state, str(os.getpid())],
                       check=True, stdout=subprocess.DEVNULL)

    jobs = jobs[:n]
    instrument("on")
    for i in range(0, n, BATCH):
        chunk, now = jobs[i:i + BATCH], time.time()
        c.execute("BEGIN IMMEDIATE")
        if way == "each":
            done = sum(c.execute(sql.COMPLETE, (None, now, j.id, j.token)).rowcount
                       for j in chunk)
        else:
            statement = ONE.format(", ".join(["(?, ?, ?)"] * len(chunk)), fence)
            done = len(c.execute(statement, [now] + [x for j in chunk
                                                     for x in (j.id, j.token, None)]).fetchall())
        c.execute("COMMIT")
        assert done == len(chunk), f"{way}: {len(chunk) - done} completions fenced out"
    instrument("off")
    c.close()


def count(way: str, n: int) -> int:
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/dev/null",
         sys.executable, __file__, "--child", way, str(n)],
        capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    if out.returncode:
        raise SystemExit(out.stderr[-2000:])
    return int(re.search(r"Collected : (\d+)", out.stderr).group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    for way in ("each", "one"):
        per_job = (count(way, args.jobs) - count(way, 0)) / args.jobs
        print(f"{way:5s} {per_job:9,.0f} instructions a job")


if __name__ == "__main__":
    main()
