"""Exactly-once effects on the application's own tables, with real worker processes: a job
that adds 1 to its own row and completes in the same transaction (``ctx.complete(conn=)``)
leaves every row at exactly 1, while workers are SIGKILLed at random and one is frozen
past its lease and woken after another worker finished its job. The companion scenarios
show the test can tell: without ``conn=``, a worker killed between the application's
commit and the job's completion leaves its row at 2.

Workers: ``app_worker.py``. On SQLite and on PostgreSQL.
"""
from __future__ import annotations

import random
import signal
import time

import pytest
from app_run import AppRun

from jobq_core import Queue

pytestmark = pytest.mark.slow  # real worker processes killed at random: seconds each

JOBS = 200


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "jobs.db")
    return request.getfixturevalue("pg_url")


@pytest.fixture
def run(tmp_path, database):
    r = AppRun(tmp_path, database, rows=JOBS)
    yield r
    r.stop_all()


def test_every_row_ends_at_exactly_one_with_workers_killed_and_one_frozen_past_its_lease(run):
    rng = random.Random(16)
    with Queue(run.db) as q:
        ids = q.enqueue_many([("add", {"row": row, "ms": rng.randint(20, 120),
                                       "tx_ms": rng.randint(0, 15)})
                              for row in range(1, JOBS + 1)])
    marker, go = run.tmp / "frozen", run.tmp / "go"
    frozen = run.worker("--mode", "txn", "--concurrency", "1", "--lease", "1",
                        "--freeze-first", str(marker), str(go))
    pools = ["thread", "process", "thread", "process"]
    opts = [("--mode", "txn", "--concurrency", "3", "--lease", "1", "--pool", pool)
            for pool in pools]
    workers = [run.worker(*o) for o in opts]

    # The frozen worker: stopped with its first job's lease running, woken once another
    # worker has finished that job.
    run.wait_for(marker.exists, 60, "the frozen worker's first job")
    run.freeze(frozen)
    frozen_job = int(marker.read_text())
    go.touch()

    def frozen_job_done() -> bool:
        with Queue(run.db, read_only=True) as q:
            return q.get(frozen_job).status == "succeeded"

    deadline = time.monotonic() + 120
    while run.unfinished() and time.monotonic() < deadline:
        time.sleep(rng.uniform(0.15, 0.4))
        i = rng.randrange(len(workers))
        run.kill(workers[i])
        workers[i] = run.worker(*opts[i])
        if frozen.poll() is None and marker.with_suffix(".done").exists() is False \
                and frozen_job_done():
            frozen.send_signal(signal.SIGCONT)
    assert frozen_job_done(), f"the frozen worker's job never finished elsewhere ({run.tmp})"
    frozen.send_signal(signal.SIGCONT)
    run.wait_for(lambda: run.unfinished() == 0, 120, "every job to finish")
    run.wait_for(lambda: (run.tmp / "frozen.done").exists(), 30,
                 "the woken worker's completion to be fenced out")

    counts, jobs = run.counts(), run.jobs()
    assert "LeaseLost" in (run.tmp / "frozen.done").read_text()
    off = {r: n for r, n in counts.items() if n != 1}
    assert off == {}, [(j.id, j.status, j.attempts, j.error) for j in jobs
                       if j.status != "succeeded"]
    assert sorted(j.id for j in jobs) == sorted(ids)
    assert {j.status for j in jobs} == {"succeeded"}
    with Queue(run.db) as q:
        assert q.store.integrity_check() == "ok"
    reruns = sum(1 for j in jobs if j.attempts > 1)
    print(f"\n{run.kills} SIGKILLs, {reruns} jobs run more than once, every row at 1")
    assert run.kills >= 3 and reruns >= 1  # the kills really hit running jobs


@pytest.mark.parametrize("mode, die, expected", [
    ("plain", "APP_DIE_AFTER_COMMIT", 2),   # at-least-once: the +1 committed, the job re-ran
    ("txn", "APP_DIE_AFTER_COMMIT", 1),     # the commit completed the job: it never re-runs
    ("txn", "APP_DIE_BEFORE_COMMIT", 1),    # neither committed: the re-run adds the only 1
])
def test_a_worker_killed_around_the_applications_commit(run, mode, die, expected):
    with Queue(run.db) as q:
        ids = q.enqueue_many([("add", {"row": row}) for row in (1, 2, 3)])
    target = ids[1]
    doomed = run.worker("--mode", mode, "--concurrency", "1", "--lease", "0.5",
                        env={die: str(target)})
    assert doomed.wait(timeout=60) == -signal.SIGKILL
    survivor = run.worker("--mode", mode, "--concurrency", "1", "--lease", "0.5")
    run.wait_for(lambda: run.unfinished() == 0, 60, "every job to finish")
    survivor.send_signal(signal.SIGTERM)
    assert survivor.wait(timeout=30) == 0
    counts = run.counts()
    assert [counts[1], counts[2], counts[3]] == [1, expected, 1]
    with Queue(run.db, read_only=True) as q:
        job = q.get(target)
    assert job.status == "succeeded"
    assert job.attempts == (1 if (mode, die) == ("txn", "APP_DIE_AFTER_COMMIT") else 2)
