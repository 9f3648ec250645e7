"""``jobq run --pool process`` as a real process sent real signals: shutdown within and past
the grace, a second signal, SIGKILL of the worker — and never a child process left behind.
Every "no process left" check names the processes below the worker while it ran (its fork
server and children) and waits for each to end."""
from __future__ import annotations

import os
import signal
import time

import pytest
from proctree import alive, descendants

from .conftest import wait_for
from .test_processes import LEASE, running_under

pytestmark = pytest.mark.slow  # real `jobq run --pool process` processes and signals

POOL = ["--pool", "process"]


def family(pid: int, children: int) -> set[int]:
    """The fork server and ``children`` child processes below the worker ``pid``."""
    return wait_for(lambda: len(found := descendants(pid)) == children + 1 and found)


def none_left(pids: set[int], timeout: float = 5.0) -> None:
    wait_for(lambda: not any(alive(p) for p in pids), timeout=timeout)


def test_a_process_pool_runs_the_handlers_in_children_of_the_worker(db, queue, procs):
    ids = queue.enqueue_many([("nap", {}) for _ in range(6)])
    w = procs.start("run", "--app", "taskapp", *POOL, "--concurrency", "2", *LEASE, "--db", db)
    below = family(w.pid, 2)
    results = [wait_for(lambda: queue.get(i).result) for i in ids]
    pids = {r["pid"] for r in results}
    assert w.pid not in pids and pids <= below
    w.send_signal(signal.SIGTERM)
    assert w.wait(10) == 0, procs.log(w)
    none_left(below)


def test_sigterm_with_a_busy_pool_lets_the_handlers_finish_and_leaves_no_process(db, queue,
                                                                                 procs):
    ids = queue.enqueue_many([("nap", {"first": 1.0}) for _ in range(2)])
    w = procs.start("run", "--app", "taskapp", *POOL, "--concurrency", "2", *LEASE, "--db", db)
    for i in ids:
        wait_for(lambda: running_under(queue, i, w.pid, 1))
    below = family(w.pid, 2)
    w.send_signal(signal.SIGTERM)
    assert w.wait(15) == 0, procs.log(w)
    assert [queue.get(i).status for i in ids] == ["succeeded", "succeeded"]
    assert queue.workers() == []
    none_left(below)


def test_sigterm_past_the_grace_releases_the_jobs_and_leaves_no_process(db, queue, procs):
    ids = queue.enqueue_many([("nap", {"first": 30}) for _ in range(2)])
    w = procs.start("run", "--app", "taskapp", *POOL, "--concurrency", "2", "--grace", "0.3",
                    *LEASE, "--db", db)
    for i in ids:
        wait_for(lambda: running_under(queue, i, w.pid, 1))
    below = family(w.pid, 2)
    stopped = time.monotonic()
    w.send_signal(signal.SIGTERM)
    assert w.wait(15) == 0, procs.log(w)
    assert time.monotonic() - stopped < 5  # grace, SIGTERM to the naps: nobody waited 30 s
    assert [(queue.get(i).status, queue.get(i).attempts) for i in ids] == [("pending", 0)] * 2
    assert procs.log(w).count("released unfinished") == 2
    none_left(below)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_worker_s_process_group_leaves_the_children_to_the_worker(
        db, queue, procs, signum):
    """Ctrl-C in a terminal signals the whole foreground process group, a shell's ``kill
    %1`` the job's: the children, in sessions of their own, do not get it; the worker lets
    their handlers finish."""
    ids = queue.enqueue_many([("nap", {"first": 1.0}) for _ in range(2)])
    w = procs.start("run", "--app", "taskapp", *POOL, "--concurrency", "2", *LEASE,
                    "--db", db, session=True)
    for i in ids:
        wait_for(lambda: running_under(queue, i, w.pid, 1))
    below = family(w.pid, 2)
    os.killpg(w.pid, signum)
    assert w.wait(15) == 0, procs.log(w)
    assert [queue.get(i).status for i in ids] == ["succeeded", "succeeded"]
    none_left(below)


def test_a_second_signal_exits_at_once_and_takes_the_children_along(db, queue, procs):
    job_id = queue.enqueue("nap", {"first": 30})
    w = procs.start("run", "--app", "taskapp", *POOL, "--concurrency", "2", "--grace", "30",
                    *LEASE, "--db", db)
    wait_for(lambda: running_under(queue, job_id, w.pid, 1))
    below = family(w.pid, 2)
    w.send_signal(signal.SIGINT)
    wait_for(lambda: "stopping" in procs.log(w))
    w.send_signal(signal.SIGINT)
    assert w.wait(5) == 130
    none_left(below)


def test_sigkill_of_the_worker_leaves_no_child_within_a_few_seconds(db, queue, procs):
    ids = queue.enqueue_many([("nap", {"first": 30}), ("stuck", {})])
    w = procs.start("run", "--app", "taskapp", *POOL, "--concurrency", "3", *LEASE, "--db", db)
    for i in ids:
        wait_for(lambda: running_under(queue, i, w.pid, 1))
    below = family(w.pid, 3)
    w.kill()
    w.wait(5)
    # The nap notices the end of its socket; the one stuck in C code holding the GIL cannot
    # notice anything: the fork server kills it.
    none_left(below)


def test_max_jobs_per_child_with_the_thread_pool_is_refused_in_one_line(db, procs):
    w = procs.start("run", "--app", "taskapp", "--max-jobs-per-child", "5", "--db", db)
    assert w.wait(30) == 2  # a usage error
    assert procs.log(w) == ("jobq: run: --max-jobs-per-child applies to --pool process only "
                            "(see jobq run --help)\n")


def test_max_jobs_per_child_recycles_the_children(db, queue, procs):
    ids = queue.enqueue_many([("nap", {}) for _ in range(6)])
    w = procs.start("run", "--app", "taskapp", *POOL, "--concurrency", "1",
                    "--max-jobs-per-child", "2", "--burst", *LEASE, "--db", db)
    assert w.wait(30) == 0, procs.log(w)
    pids = [queue.get(i).result["pid"] for i in ids]
    assert len(set(pids)) == 3 and all(pids.count(p) == 2 for p in pids), pids
