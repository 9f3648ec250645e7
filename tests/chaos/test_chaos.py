"""Fault injection with real processes: nothing lost, one completion per job, a sound file.

Every scenario is seeded. ``--soak SECONDS`` stretches the random-kill scenario into a soak
that keeps feeding jobs and killing workers for that long.
"""
from __future__ import annotations

import json
import os
import random
import resource
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from jobq_core import Queue

pytestmark = pytest.mark.slow  # real worker processes killed, stopped and resumed: seconds each


def _finish(chaos, timeout=60.0):
    chaos.wait_for(lambda: chaos.unfinished() == 0, timeout, "every job to reach a final state")


def _claims(chaos, job_id=None):
    return [e for e in chaos.events()
            if e["ev"] == "claimed" and (job_id is None or e["job"] == job_id)]


def _stop(chaos, *workers):
    chaos.stop(*workers, timeout=30)


def _has_claimed(chaos, worker) -> bool:
    return any(e["ev"] == "claimed" and e["pid"] == worker.pid for e in chaos.events())


@pytest.mark.parametrize("pool", ["thread", "process"])
def test_workers_sigkilled_at_random_lose_nothing_and_complete_each_job_once(chaos, soak, pool):
    rng = random.Random(1)

    def feed(n):
        chaos.enqueue([{"kind": "work", "payload": {"ms": rng.randint(5, 60)}}
                       for _ in range(n)])

    feed(1000)
    opts = ("--concurrency", "4", "--lease", "1", "--pool", pool)
    workers = [chaos.worker(*opts) for _ in range(4)]
    end = time.monotonic() + max(3.0, soak)
    while time.monotonic() < end or chaos.faults < 3:
        time.sleep(rng.uniform(0.15, 0.4))
        i = rng.randrange(len(workers))
        # Kill a worker that holds jobs (on a loaded machine one may still be starting).
        chaos.wait_for(lambda: _has_claimed(chaos, workers[i]) or not chaos.unfinished(),
                       20, "the worker's first claim")
        chaos.kill(workers[i])
        workers[i].wait()
        workers[i] = chaos.worker(*opts)
        if (soak or chaos.faults < 3) and chaos.unfinished() < 300:
            feed(500)  # work for the kills to hit
        if not soak and chaos.unfinished() == 0:
            break
    _finish(chaos)
    _stop(chaos, *workers)
    report = chaos.check()
    print(f"\n{chaos.faults} SIGKILLs: {report}")
    assert not report.violations, report
    assert chaos.faults >= 3 and report.reruns > 0  # kills really hit running jobs
    assert report.accepted >= 0.95 * report.jobs  # the log saw (nearly) every completion


def test_a_worker_killed_between_handler_return_and_commit_runs_the_job_again_once(chaos):
    ids = chaos.enqueue([("work", {"ms": 1}) for _ in range(5)])
    target = ids[2]
    doomed = chaos.worker("--concurrency", "1", "--lease", "0.5",
                          env={"CHAOS_DIE_BEFORE_COMMIT": str(target)})
    assert doomed.wait(timeout=30) == -signal.SIGKILL
    chaos.faults += 1
    survivor = chaos.worker("--concurrency", "1", "--lease", "0.5")
    _finish(chaos)
    _stop(chaos, survivor)
    ran = [e for e in chaos.events() if e["ev"] == "ran" and e["job"] == target]
    assert len(ran) == 2 and len(_claims(chaos, target)) == 2  # at-least-once: twice...
    accepted = [e for e in chaos.events() if e["ev"] == "accepted" and e["job"] == target]
    assert len(accepted) == 1  # ...and completed once
    report = chaos.check()
    assert not report.violations, report


@pytest.mark.parametrize("resume", ["while the new owner runs", "after the new owner finished"])
def test_a_stopped_worker_resumed_after_a_takeover_cannot_complete_the_job(chaos, resume):
    (job_id,) = chaos.enqueue([("work", {"ms": 1200})])
    zombie = chaos.worker("--concurrency", "1", "--lease", "0.5")
    chaos.wait_for(lambda: len(_claims(chaos, job_id)) == 1, 20, "the first claim")
    chaos.kill(zombie, signal.SIGSTOP)
    owner = chaos.worker("--concurrency", "1", "--lease", "0.5")
    chaos.wait_for(lambda: len(_claims(chaos, job_id)) == 2, 20, "the takeover")
    if resume == "after the new owner finished":
        _finish(chaos)
    chaos.kill(zombie, signal.SIGCONT)
    _finish(chaos)
    time.sleep(1.5)  # let the zombie's handler end and its heartbeat run
    _stop(chaos, zombie, owner)
    first, second = _claims(chaos, job_id)
    accepted = [e for e in chaos.events() if e["ev"] == "accepted" and e["job"] == job_id]
    assert [e["token"] for e in accepted] == [second["token"]]
    with Queue(chaos.db) as q:
        assert q.get(job_id).result["pid"] == owner.pid
    report = chaos.check()
    assert not report.violations, report


def test_eight_processes_contending_for_five_thousand_jobs_never_share_a_lease(chaos):
    chaos.enqueue([("work", {"ms": 0}) for _ in range(5000)])
    workers = [chaos.worker("--concurrency", "4", "--lease", "5", "--burst") for _ in range(8)]
    for w in workers:
        assert w.wait(timeout=120) == 0
    report = chaos.check()
    assert not report.violations, report
    assert report.accepted == 5000 and report.reruns == 0
    logs = "".join(p.read_text() for p in chaos.logs.glob("proc*.log"))
    assert "locked" not in logs


def test_a_producer_killed_mid_burst_leaves_whole_batches_and_every_acknowledged_id(chaos):
    rng = random.Random(5)
    for _ in range(4):
        producer = chaos.producer(batches=100_000, size=100)
        chaos.wait_for(lambda: sum(e["ev"] == "enqueued" for e in chaos.events()) >= 3, 30,
                       "a few acknowledged batches")
        time.sleep(rng.uniform(0, 0.05))
        chaos.kill(producer)
        producer.wait()
    acked = {i for e in chaos.events() if e["ev"] == "enqueued" for i in e["ids"]}
    conn = sqlite3.connect(chaos.db)
    stored = {r[0] for r in conn.execute("SELECT id FROM jobq_jobs")}
    per_batch = conn.execute(
        "SELECT count(*) FROM jobq_jobs GROUP BY json_extract(payload, '$.batch'), created_at"
    ).fetchall()
    conn.close()
    assert acked <= stored  # every acknowledged id is there
    assert {n for (n,) in per_batch} == {100}  # no partial batch
    assert len(stored) - len(acked) <= 4 * 100  # at most the batch each kill interrupted


@pytest.mark.parametrize("skew", [
    ("--clock-offset", "3600"),  # this worker's clock runs an hour ahead
    ("--clock-offset", "-3600"),  # an hour behind
    ("--clock-jump", "3600", "--clock-jump-after", "0.3"),  # jumps forward mid-job
    ("--clock-jump", "-3600", "--clock-jump-after", "0.3"),  # jumps back mid-job
])
def test_skewed_and_jumping_clocks_never_crash_or_let_a_stale_completion_through(chaos, skew):
    chaos.enqueue([("work", {"ms": 30}) for _ in range(200)])
    honest = chaos.worker("--concurrency", "4", "--lease", "0.5")
    skewed = chaos.worker("--concurrency", "4", "--lease", "0.5", *skew)
    _finish(chaos)
    _stop(chaos, honest, skewed)
    # Disagreeing clocks may hand a job to two workers (leases are wall-clock times);
    # fencing still accepts one completion per job, the latest claim's.
    report = chaos.check(check_leases=False)
    assert not report.violations, report


def test_a_sigterm_stops_claiming_and_a_second_signal_exits_at_once(chaos):
    chaos.enqueue([("work", {"ms": 3000}) for _ in range(8)])
    w = chaos.worker("--concurrency", "4", "--lease", "1", "--grace", "30")
    chaos.wait_for(lambda: len(_claims(chaos)) == 4, 20, "four running jobs")
    chaos.kill(w, signal.SIGTERM)
    stopped_at = time.time()
    time.sleep(0.3)
    chaos.kill(w, signal.SIGINT)
    assert w.wait(timeout=10) == 130
    assert all(e["t"] < stopped_at for e in _claims(chaos))  # no claims after the first
    rescuer = chaos.worker("--concurrency", "4", "--lease", "1")
    _finish(chaos)
    _stop(chaos, rescuer)
    report = chaos.check()
    assert not report.violations, report


def test_a_sigterm_lets_running_jobs_finish_and_leaves_the_rest_pending(chaos):
    ids = chaos.enqueue([("work", {"ms": 800}) for _ in range(6)])
    w = chaos.worker("--concurrency", "2", "--lease", "1", "--grace", "30")
    chaos.wait_for(lambda: len(_claims(chaos)) == 2, 20, "two running jobs")
    chaos.kill(w, signal.SIGTERM)
    assert w.wait(timeout=20) == 0
    with Queue(chaos.db) as q:
        statuses = [q.get(i).status for i in ids]
    assert statuses.count("succeeded") == 2 and statuses.count("pending") == 4


@pytest.mark.parametrize("pool", ["thread", "process"])
def test_handlers_that_raise_exit_spin_hang_or_return_junk_fail_cleanly(chaos, pool):
    bad = chaos.enqueue([("raise", 1), ("exit", None), ("nonjson", None), ("spin", None),
                         ("hang", None), {"kind": "no-such-kind", "max_attempts": 1}])
    good = chaos.enqueue([("work", {"ms": 1}) for _ in range(20)])
    w = chaos.worker("--concurrency", "2", "--lease", "1", "--pool", pool)
    _finish(chaos, timeout=60)
    assert w.poll() is None  # the worker survived all of it
    _stop(chaos, w)
    with Queue(chaos.db) as q:
        errors = {q.get(i).kind: q.get(i).error for i in bad}
        assert all(q.get(i).status == "dead" for i in bad)
        assert all(q.get(i).status == "succeeded" for i in good)
    assert "ValueError: handler failed on purpose" in errors["raise"]
    assert "Traceback" in errors["raise"]
    assert "SystemExit" in errors["exit"]
    assert "JSON" in errors["nonjson"]
    assert "timed out" in errors["spin"] and "timed out" in errors["hang"]
    assert "no handler for kind 'no-such-kind'" in errors["no-such-kind"]
    report = chaos.check()
    assert not report.violations, report


def _room(chaos, spare: int) -> int:
    """A file-size limit leaving ``spare`` bytes past the database's files as they are."""
    sizes = [os.path.getsize(p) for p in (chaos.db, chaos.db + "-wal") if os.path.exists(p)]
    return max(sizes) + spare


def test_a_full_disk_fails_enqueue_clearly_and_workers_recover_when_space_returns(chaos):
    ids = chaos.enqueue([("work", {"ms": 1, "pad": "x" * 300}) for _ in range(300)])
    limit = _room(chaos, 48 * 1024)
    jobq = [sys.executable, "-m", "jobq_cli.main"]
    full = subprocess.run(
        [*jobq, "enqueue", "--db", chaos.db, "--stdin"], capture_output=True, text=True,
        input=json.dumps({"kind": "work", "payload": {"blob": "x" * 2_000_000}}) + "\n",
        timeout=60,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE,
                                              (limit, resource.RLIM_INFINITY)))
    assert full.returncode != 0
    assert "full" in full.stderr and "Traceback" not in full.stderr, full.stderr
    assert full.stdout == "" and full.stderr.count("\n") == 1
    w = chaos.worker("--concurrency", "4", "--lease", "0.5", file_limit=limit)
    chaos.wait_for(lambda: "full" in "".join(p.read_text() for p in chaos.logs.glob("*.log")),
                   30, "the worker to hit the full disk")
    chaos.faults += 1
    assert w.poll() is None  # still alive, backing off
    chaos.kill(w, signal.SIGUSR1)  # space returns
    _finish(chaos)
    _stop(chaos, w)
    report = chaos.check()
    assert not report.violations, report
    with Queue(chaos.db) as q:
        assert q.count(status="succeeded") == len(ids)


def test_the_history_reader_drops_the_piece_a_killed_writer_left_and_keeps_the_rest(tmp_path):
    from history import read_history

    log = tmp_path / "history.jsonl"
    log.write_bytes(b'{"job": 1, "ev": "claimed"}\n'
                    b'{"job": 2, "token": 7, "ev": "accepted", "{"job": 3, "ev": "ran"}\n'
                    b'{"job": 4, "ev": "ran"}\n'
                    b'{"job": 5, "ev"')
    assert [e["job"] for e in read_history(str(log))] == [1, 3, 4]
