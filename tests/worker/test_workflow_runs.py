"""Dependencies with real workers: a chain and a group run in order, in the thread pool and
in the process pool, each handler reading what it waited on (ctx.dependency_results)."""
from __future__ import annotations

import pytest

from jobq_core import Queue, Worker

from .pool_tasks import registry


@pytest.mark.parametrize("pool", ["thread", "process"])
def test_a_chain_and_a_group_run_in_order_and_read_their_dependencies_results(db, pool):
    with Queue(db) as q:
        chain = q.chain([("add_deps", 1), ("add_deps", 10), ("add_deps", 100)])
        members, total = q.group([("add_deps", n) for n in (1, 2, 3)],
                                 then=("add_deps", 1000))
        Worker(q, registry, pool=pool, concurrency=2).run(burst=True, handle_signals=False)
        assert [q.get(i).result for i in chain] == [1, 11, 111]
        assert q.get(total).result == 1006
        runs = sorted((q.get(i).started_at, i) for i in [*members, total])
        assert runs[-1][1] == total  # the callback started after every member
        assert q.get(total).started_at >= max(q.get(m).finished_at for m in members)


@pytest.mark.parametrize("pool", ["thread", "process"])
def test_a_handler_that_snoozes_runs_again_without_using_its_attempts(db, pool, tmp_path):
    with Queue(db) as q:  # max_attempts=1: a failure would end it dead
        job_id = q.enqueue("snoozy", {"path": str(tmp_path / "runs"), "times": 3})
        Worker(q, registry, pool=pool).run(burst=True, handle_signals=False)
        job = q.get(job_id)
        assert (job.status, job.result) == ("succeeded", [3, 1])
        assert [a.outcome for a in q.attempts(job_id)] == ["snoozed", "snoozed", "succeeded"]
