"""One workload of the instruction-count guard, run under callgrind by test_instructions.py.

    python instr_child.py WORKLOAD N [DATABASE]

enqueue: Queue.enqueue N times; drain: N jobs claimed and completed one at a time through
the API; worker: N no-op jobs drained by a Worker in burst mode (thread pool). N=0 does
everything but the jobs: the cost of starting, which the test subtracts.
"""
import os
import sys
import tempfile

from jobq_core import Queue, Registry, Worker
from jobq_core.testing import FakeClock

workload, n = sys.argv[1], int(sys.argv[2])
database = sys.argv[3] if len(sys.argv) > 3 else os.path.join(tempfile.mkdtemp(), "jobs.db")
q = Queue(database, clock=FakeClock()) if workload != "worker" else Queue(database)
if workload == "enqueue":
    for _ in range(n):
        q.enqueue("k")
elif workload == "drain":
    q.enqueue_many([("k", None)] * n)
    while (job := q.claim("w")) is not None:
        q.complete(job.id, job.token)
elif workload == "worker":
    registry = Registry()
    registry.task("k")(lambda payload: None)
    q.enqueue_many([("k", None)] * n)
    Worker(q, registry, concurrency=4).run(burst=True, handle_signals=False)
    assert q.stats().pending == 0
q.close()
