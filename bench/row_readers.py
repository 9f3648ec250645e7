"""row_readers.py - what the generated row readers of ``store/rows.py`` save, A/B in one run.

``store/rows.py`` builds its readers (``job_from_row``, ``claimed_job``) with ``exec``: one
unrolled line per ``Job`` field, setting each slot directly. The plain alternative is
``Job(*values)``, whose frozen-dataclass ``__init__`` sets every field through
``object.__setattr__``. This script times both on the same rows, alternating, and prints
the cost per row and what it is as a share of a claimed-and-completed job (``--drain``:
the API drain's own time per job, measured in the same run). With ``--instructions`` it
counts instead, under callgrind: instructions per row of each reader (N rows minus none,
each in a fresh process), which do not drift with the machine's load.

    python bench/row_readers.py
    python bench/row_readers.py --instructions
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from jobq_core import Job, JobStatus, Queue
from jobq_core.store.rows import CLAIM_FIELDS, SET_BY_CLAIM, claimed_job, decode
from jobq_core.testing import FakeClock


def plain_claimed(r, lease_until, worker, now):
    """The readable reader: the claim's row unpacked, through ``Job``'s own ``__init__``."""
    (id_, kind, queue, payload, priority, attempts, max_attempts, run_at, token, result, error,
     created_at, finished_at, unique_key, cancel_requested, key, trace_context) = r
    return Job(id_, kind, queue, decode(payload), priority, JobStatus.RUNNING,
               attempts, max_attempts, run_at, lease_until, worker, token, decode(result), error,
               created_at, now, finished_at, unique_key, None, None, bool(cancel_requested), now,
               key, trace_context)


ROW = tuple({"id": 7, "kind": "k", "queue": "default", "payload": '{"a": 1}', "priority": 0,
             "attempts": 1, "max_attempts": 20, "run_at": 0.0, "token": 42, "result": None,
             "error": None, "created_at": 0.0, "finished_at": None, "unique_key": None,
             "cancel_requested": 0, "key": None,
             "trace_context": None}[name] for name in CLAIM_FIELDS)


def per_row(reader, rows, rounds: int) -> float:
    best = []
    for _ in range(rounds):
        start = time.perf_counter()
        for r in rows:
            reader(r, 1.0, "w", 0.5)
        best.append((time.perf_counter() - start) / len(rows))
    return statistics.median(best)


def drain_per_job(n: int) -> float:
    q = Queue(os.path.join(tempfile.mkdtemp(), "jobs.db"), clock=FakeClock())
    q.enqueue_many([("k", None)] * n)
    start = time.perf_counter()
    while (job := q.claim("w")) is not None:
        q.complete(job.id, job.token)
    return (time.perf_counter() - start) / n


READERS = {"generated": claimed_job, "plain": plain_claimed}


def instructions(reader: str, n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.out",
             sys.executable, __file__, "--child", reader, str(n)],
            capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    return int(re.search(r"Collected : (\d+)", out.stderr).group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        reader, n = READERS[args.child[0]], int(args.child[1])
        for _ in range(n):
            reader(ROW, 1.0, "w", 0.5)
        return
    if args.instructions:
        cost = {name: (instructions(name, args.rows) - instructions(name, 0)) / args.rows
                for name in READERS}
        print(f"generated reader  {cost['generated']:9,.0f} instructions/row")
        print(f"Job(*fields)      {cost['plain']:9,.0f} instructions/row "
              f"({cost['plain'] / cost['generated']:.2f}x)")
        return
    assert set(SET_BY_CLAIM) | set(CLAIM_FIELDS) == set(Job.__slots__)
    assert claimed_job(ROW, 1.0, "w", 0.5) == plain_claimed(ROW, 1.0, "w", 0.5)
    rows = [ROW] * args.rows
    generated, plain = [], []
    for _ in range(3):  # A B A B A B
        generated.append(per_row(claimed_job, rows, args.rounds))
        plain.append(per_row(plain_claimed, rows, args.rounds))
    g, p = statistics.median(generated), statistics.median(plain)
    job = drain_per_job(2000)
    print(f"generated reader  {g * 1e6:6.2f} us/row")
    print(f"Job(*fields)      {p * 1e6:6.2f} us/row   ({p / g:.1f}x)")
    print(f"API drain         {job * 1e6:6.2f} us/job (claim + complete, one at a time)")
    print(f"saved per claimed job: {(p - g) * 1e6:.2f} us = {(p - g) / job:.1%} of a drained job")


if __name__ == "__main__":
    main()
