"""One workload of the instruction-count guard, run under callgrind by test_instructions.py.

    python instr_child.py WORKLOAD N [DATABASE]

enqueue: Queue.enqueue N times; drain: N jobs enqueued in one batch, then claimed and
completed one at a time through the API; worker: N no-op jobs drained by a Worker in burst
mode (thread pool) with one slot, so that each job is one claim and one completion whatever
the machine's load (with more slots, how many outcomes share a commit follows the timing of
the threads, and so did the count: +33 % under the whole suite's load). Callgrind starts with instrumentation off (``--instr-atstart=no``):
the interpreter's start, the imports and opening the store run at valgrind's plain speed
and are not counted; ``counting()`` turns it on around the jobs alone.
"""
import contextlib
import os
import subprocess
import sys
import tempfile

from jobq_core import Queue, Registry, Worker
from jobq_core.testing import FakeClock


@contextlib.contextmanager
def counting():
    def instrument(state: str) -> None:
        subprocess.run(["callgrind_control", "--instr=" + state, str(os.getpid())],
                       check=True, stdout=subprocess.DEVNULL)

    instrument("on")
    yield
    instrument("off")


workload, n = sys.argv[1], int(sys.argv[2])
database = sys.argv[3] if len(sys.argv) > 3 else os.path.join(tempfile.mkdtemp(), "jobs.db")
q = Queue(database, clock=FakeClock()) if workload != "worker" else Queue(database)
q.check()  # opened before counting: a PostgreSQL queue connects on its first use
if workload == "enqueue":
    if database.startswith("postgresql"):
        # One notification window for the whole run: how many enqueues a 10 ms window
        # holds back depends on how fast the server answers, and each window's end costs
        # a trailing notification, so the count would follow the machine's load.
        from jobq_core.store.postgres.notify import Notifier

        Notifier.EVERY = 3600.0
    with counting():
        for _ in range(n):
            q.enqueue("k")
    while (job := q.claim("w")) is not None:  # uncounted: leaves the database as it was
        q.complete(job.id, job.token)
elif workload == "drain":
    with counting():
        q.enqueue_many([("k", None)] * n)
        while (job := q.claim("w")) is not None:
            q.complete(job.id, job.token)
elif workload == "worker":
    # The GIL changes hands when a thread blocks, not when a waiting one's 5 ms run out:
    # under valgrind those run out every few thousand instructions, and more often the
    # more the machine's load stretches the run (1.13x the baseline beside a second suite).
    sys.setswitchinterval(10.0)
    registry = Registry()
    registry.task("k")(lambda payload: None)
    q.enqueue_many([("k", None)] * n)
    # Another worker leads: the measured one runs no maintenance duty, whose first pass
    # (its queries, its lazy imports) would fall inside the count or outside it as the
    # machine's load stretches or shortens the drain.
    q.elect("instr-guard-leader", 3600.0)
    worker = Worker(q, registry, concurrency=1)
    with counting():
        worker.run(burst=True, handle_signals=False)
    assert q.stats().pending == 0
q.close()
