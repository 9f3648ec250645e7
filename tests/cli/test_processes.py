"""``jobq`` as real processes sent real signals: draining exactly once, crashes, frozen
workers (zombies), graceful shutdown. Leases are short (1 s) so faults resolve quickly;
every wait polls the database with a deadline."""
from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys

import pytest
from proctree import descendants

from jobq_core import Queue

from .conftest import wait_for

pytestmark = pytest.mark.slow  # real `jobq run` processes, signals and leases

LEASE = ["--lease", "1"]


def running_under(queue: Queue, job_id: int, pid: int, attempt: int):
    job = queue.get(job_id)
    ok = (job.status == "running" and job.attempts == attempt and job.worker
          and f"-{pid}-" in job.worker)
    return job if ok else None


def test_enqueue_as_a_process_prints_the_id_and_a_bad_payload_exits_1_with_one_line(app_dir):
    ok = subprocess.run([sys.executable, "-m", "jobq_cli.main", "enqueue", "k", '{"a": 1}'],
                        cwd=app_dir, capture_output=True, text=True, timeout=30)
    assert (ok.returncode, ok.stdout) == (0, "1\n")
    bad = subprocess.run([sys.executable, "-m", "jobq_cli.main", "show", "7", "--db", "none.db"],
                         cwd=app_dir, capture_output=True, text=True, timeout=30)
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr == "jobq: none.db: no such database file\n"
    assert not (app_dir / "none.db").exists()


def test_two_processes_with_four_slots_each_drain_300_jobs_each_exactly_once(db, queue, procs,
                                                                             app_dir):
    log = str(app_dir / "runs.txt")
    workers = [procs.start("run", "--app", "taskapp", "--concurrency", "4", *LEASE, "--db", db)
               for _ in range(2)]
    wait_for(lambda: len(queue.workers()) == 2)  # both idle and polling before work arrives
    ids = queue.enqueue_many([("record", {"log": log, "sleep": 0.01}) for _ in range(300)])
    wait_for(lambda: queue.stats().succeeded_recent == 300, timeout=60)
    for p in workers:
        p.send_signal(signal.SIGTERM)
    for p in workers:
        assert p.wait(10) == 0, procs.log(p)
    runs = collections.Counter()
    pids = set()
    for line in open(log):
        job_id, pid = line.split()
        runs[int(job_id)] += 1
        pids.add(int(pid))
    assert runs == {i: 1 for i in ids}
    assert pids == {p.pid for p in workers}  # both took part
    jobs = queue.list(limit=1000)
    assert {(j.status, j.attempts) for j in jobs} == {("succeeded", 1)}
    assert queue.workers() == []


def test_a_worker_killed_mid_job_has_the_job_reaped_and_completed_by_another(db, queue, procs):
    job_id = queue.enqueue("nap", {"first": 30, "then": 0.1})
    a = procs.start("run", "--app", "taskapp", *LEASE, "--db", db)
    wait_for(lambda: running_under(queue, job_id, a.pid, 1))
    a.kill()  # SIGKILL: no cleanup at all
    a.wait(5)
    b = procs.start("run", "--app", "taskapp", *LEASE, "--db", db)
    job = wait_for(lambda: (j := queue.get(job_id)).status == "succeeded" and j)
    assert job.attempts == 2 and job.result == {"pid": b.pid, "attempt": 2}
    assert [a.outcome for a in queue.attempts(job_id)] == ["lease expired", "succeeded"]


@pytest.mark.parametrize("pool", ["thread", "process"])
def test_a_frozen_worker_past_its_lease_cannot_overwrite_the_result_of_the_worker_that_took_over(
        db, queue, procs, pool):
    """With --pool process only the worker is frozen: its child finishes the handler meanwhile,
    and the worker reads the result when it wakes up, too late."""
    job_id = queue.enqueue("nap", {"first": 2.0, "then": 2.5})
    a = procs.start("run", "--app", "taskapp", "--pool", pool, *LEASE, "--db", db)
    wait_for(lambda: running_under(queue, job_id, a.pid, 1))
    os.kill(a.pid, signal.SIGSTOP)
    b = procs.start("run", "--app", "taskapp", "--pool", pool, *LEASE, "--db", db)
    wait_for(lambda: running_under(queue, job_id, b.pid, 2))
    os.kill(a.pid, signal.SIGCONT)  # the zombie wakes while b still runs the job
    wait_for(lambda: "lease lost" in procs.log(a), timeout=10)
    job = wait_for(lambda: (j := queue.get(job_id)).status == "succeeded" and j)
    assert job.result["attempt"] == 2
    assert job.result["pid"] in ({b.pid} if pool == "thread" else descendants(b.pid))
    assert job.attempts == 2
    assert a.poll() is None  # the zombie's worker went on running
    a.send_signal(signal.SIGTERM)
    assert a.wait(10) == 0


def test_sigterm_during_a_job_lets_it_finish_and_the_worker_exits_zero(db, queue, procs):
    job_id = queue.enqueue("nap", {"first": 1.0})
    waiting = queue.enqueue("nap", {"first": 0}, priority=-1)
    w = procs.start("run", "--app", "taskapp", "--concurrency", "1", *LEASE, "--db", db)
    wait_for(lambda: running_under(queue, job_id, w.pid, 1))
    w.send_signal(signal.SIGTERM)
    assert w.wait(15) == 0, procs.log(w)
    assert queue.get(job_id).status == "succeeded"
    assert queue.get(waiting).status == "pending"  # nothing new was claimed after the signal
    assert queue.workers() == []


def test_sigint_past_the_grace_period_releases_the_job_for_another_worker_at_once(db, queue,
                                                                                   procs):
    job_id = queue.enqueue("nap", {"first": 30})
    w = procs.start("run", "--app", "taskapp", "--grace", "0.2", *LEASE, "--db", db)
    wait_for(lambda: running_under(queue, job_id, w.pid, 1))
    w.send_signal(signal.SIGINT)
    assert w.wait(15) == 0, procs.log(w)
    job = queue.get(job_id)
    assert (job.status, job.attempts) == ("pending", 0)
    assert "released unfinished" in procs.log(w)


def test_an_unknown_kind_goes_dead_without_stopping_the_worker(db, queue, procs):
    unknown = queue.enqueue("no.such.kind", max_attempts=1)
    w = procs.start("run", "--app", "taskapp", *LEASE, "--db", db)
    wait_for(lambda: queue.get(unknown).status == "dead")
    later = queue.enqueue("nap", {})
    wait_for(lambda: queue.get(later).status == "succeeded")
    assert "no handler for kind 'no.such.kind'" in queue.get(unknown).error
    w.send_signal(signal.SIGTERM)
    assert w.wait(10) == 0


def test_a_raising_handler_is_retried_then_dead_with_its_traceback_stored(db, queue, procs):
    job_id = queue.enqueue("boom", {"n": 7}, max_attempts=3)
    w = procs.start("run", "--app", "taskapp", *LEASE, "--db", db)
    job = wait_for(lambda: (j := queue.get(job_id)).status == "dead" and j)
    w.send_signal(signal.SIGTERM)
    assert w.wait(10) == 0
    assert job.attempts == 3
    assert job.error.startswith("Traceback (most recent call last):")
    assert "ValueError: boom {'n': 7}" in job.error
    out = procs.log(w)
    assert f"job={job_id} kind=boom attempt=3/3 failed" in out and "dead" in out


def test_the_demo_without_a_terminal_ends_on_its_own_with_a_summary(app_dir):
    p = subprocess.run([sys.executable, "-m", "jobq_cli.main", "demo", "--duration", "2",
                        "--db", "demo.db"], cwd=app_dir, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "jobq-tui demo.db" in p.stdout and "demo summary" in p.stdout
    with Queue(app_dir / "demo.db") as q:
        stats = q.stats()
    assert stats.succeeded_recent > 10
    assert json.loads(subprocess.run(
        [sys.executable, "-m", "jobq_cli.main", "workers", "--json", "--db", "demo.db"],
        cwd=app_dir, capture_output=True, text=True, timeout=30).stdout) == []


def test_a_second_sigint_exits_at_once_leaving_the_lease_to_expire(db, queue, procs):
    job_id = queue.enqueue("nap", {"first": 30})
    w = procs.start("run", "--app", "taskapp", "--grace", "30", *LEASE, "--db", db)
    wait_for(lambda: running_under(queue, job_id, w.pid, 1))
    w.send_signal(signal.SIGINT)
    wait_for(lambda: "stopping" in procs.log(w))
    w.send_signal(signal.SIGINT)
    assert w.wait(5) == 130
    assert queue.get(job_id).status == "running"  # until its lease runs out and it is reaped
    assert "second signal: exiting now" in procs.log(w)


@pytest.mark.slow
def test_a_job_that_kills_its_thread_pool_worker_goes_dead_as_poison_after_three(
        app_dir, db, queue):
    """Each ``jobq run`` claims the job and dies with it (``os._exit``, as a segfault);
    the next one logs that its predecessor died, its reaper takes the job back once the
    lease (1 s) has run out, and at the third lost worker it is dead, not retried 20 times."""
    import shutil
    import time as _time
    from pathlib import Path

    shutil.copy(Path(__file__).with_name("crashapp.py"), app_dir / "crashapp.py")
    crash = queue.enqueue("crash", max_attempts=20)
    logs, deaths = [], 0
    for _ in range(20):
        p = subprocess.run([sys.executable, "-m", "jobq_cli.main", "run", "--app", "crashapp",
                            "--lease", "1s", "--burst", "--db", db], cwd=app_dir,
                           capture_output=True, text=True, timeout=60)
        logs.append(p.stdout + p.stderr)
        if queue.get(crash).status == "dead":
            break
        assert p.returncode in (0, 70), logs[-1]  # 0: the retry was not due yet
        deaths += p.returncode == 70
        _time.sleep(1.2)  # the lease runs out, the backoff passes
    assert deaths == 3, logs
    job = queue.get(crash)
    assert job.status == "dead" and job.attempts == 3, logs
    assert job.error.startswith("poison job: its last 3 attempts each ended with the worker lost")
    assert [a.outcome for a in queue.attempts(crash)] == ["lease expired"] * 3
    assert "died without stopping" in logs[1] and "--pool process" in logs[1], logs[1]
    assert "died without stopping" not in logs[0], logs[0]
    assert "dead as a poison job" in logs[-1], logs[-1]
    # the worker that found it poisoned runs the next job and stops cleanly
    fine = queue.enqueue("fine")
    p = subprocess.run([sys.executable, "-m", "jobq_cli.main", "run", "--app", "crashapp",
                        "--burst", "--db", db], cwd=app_dir, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and queue.get(fine).status == "succeeded", p.stderr
    listed = subprocess.run([sys.executable, "-m", "jobq_cli.main", "list", "--status", "dead",
                             "--db", db], cwd=app_dir, capture_output=True, text=True,
                            timeout=60, env={**os.environ, "COLUMNS": "200"}).stdout
    assert "poison job" in listed, listed
