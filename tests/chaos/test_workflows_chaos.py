"""A fan-out and its callback under random SIGKILLs of real workers, on both stores: the
callback is released once, after every member succeeded, never before, and completes once."""
from __future__ import annotations

import random
import time

import pytest
from history import HistoryWriter

from jobq_core import Queue

pytestmark = pytest.mark.slow
# Times written by two workers, each from its own estimate of the server clock (PostgreSQL),
# agree within milliseconds, not exactly: an order between them is judged within this.
CLOCK_ESTIMATES_AGREE = 0.05  # seconds


@pytest.mark.parametrize("store", ["chaos", "pg_chaos"])
def test_a_group_callback_runs_after_all_members_succeeded_under_sigkills(request, store):
    chaos = request.getfixturevalue(store)
    rng = random.Random(7)
    with Queue(chaos.db) as q:
        members, callback = q.group(
            [("work", {"ms": rng.randint(20, 100)}) for _ in range(200)],
            then=("work", {"ms": 1}))
    w = HistoryWriter(chaos.history)
    w.write("enqueued", ids=[*members, callback])
    w.close()
    opts = ("--concurrency", "4", "--lease", "1")
    workers = [chaos.worker(*opts) for _ in range(4)]
    while chaos.faults < 4 and chaos.unfinished():
        time.sleep(rng.uniform(0.15, 0.4))
        i = rng.randrange(len(workers))
        # Kill a worker that holds jobs (on a loaded machine one may still be starting).
        chaos.wait_for(lambda: any(e["ev"] == "claimed" and e["pid"] == workers[i].pid
                                   for e in chaos.events()) or not chaos.unfinished(),
                       20, "the worker's first claim")
        chaos.kill(workers[i])
        workers[i].wait()
        workers[i] = chaos.worker(*opts)
    chaos.wait_for(lambda: chaos.unfinished() == 0, 90, "the group and its callback to end")
    for p in workers:
        p.terminate()
        p.wait(timeout=30)
    report = chaos.check()
    assert not report.violations, report
    assert chaos.faults >= 3 and report.reruns > 0, report  # the kills hit running members
    with Queue(chaos.db) as q:
        done = [q.get(m) for m in members]
        assert {j.status for j in done} == {"succeeded"}
        job = q.get(callback)
        assert job.status == "succeeded"
        last_member = max(j.finished_at for j in done)
        starts = [a.started_at for a in q.attempts(callback)]
        # Two workers wrote these times, each from its own estimate of the server's clock
        # (on PostgreSQL): the estimates agree within milliseconds, not exactly. A callback
        # started before its members had all run would be early by a member's run.
        assert starts and min(starts) >= last_member - CLOCK_ESTIMATES_AGREE, (
            starts, last_member)
    accepted = [e for e in chaos.events() if e["ev"] == "accepted" and e["job"] == callback]
    assert len(accepted) == 1
