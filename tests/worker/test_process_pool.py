"""The process pool in-process (``Worker(pool="process")``), on every store with real
child processes: parallel CPU work, hard timeouts, crashes, recycling, the context in a
child, results and errors, shutdown. The handlers are in ``pool_tasks.py``, which each child
imports by name."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from proctree import alive, descendants

from jobq_core import Backoff, JobqError, Queue, Registry, Worker
from jobq_core.testing import FakeClock, wait_for

from .conftest import start
from .pool_tasks import registry

# what these tests watch (children started, killed, recycled, reused) is the pool's own; a
# child's calls to its store are one test's subject, which stays fast on every store
pytestmark = pytest.mark.slow_on("postgresql", why="the pool's process handling is the "
                                 "same on every store")


def burst(db, **kwargs) -> Worker:
    with Queue(db) as q:
        w = Worker(q, registry, pool="process", **kwargs)
        w.run(burst=True, handle_signals=False)
    return w


def child_pid(producer, job_id) -> int:
    """The pid a running handler reported (``pool_tasks._tell_pid``)."""
    job = wait_for(lambda: (j := producer.get(job_id)).progress_message and j)
    return int(job.progress_message)


BURN = """import os, sys, time
wall, cpu = time.time(), time.thread_time()
while not os.path.exists(sys.argv[1]):
    end = time.thread_time() + 0.01
    while time.thread_time() < end:
        pass
print((time.thread_time() - cpu) / (time.time() - wall))"""


def share(result) -> float:
    """The share of a core a ``burn`` handler got while it ran."""
    return result["cpu"] / (result["end"] - result["start"])


@pytest.mark.slow
def test_two_cpu_bound_handlers_on_a_pool_of_two_run_at_once_each_on_a_core_of_its_own(
        db, producer, tmp_path):
    ids = producer.enqueue_many([("burn", {"cpu": 1.0}) for _ in range(2)])
    w = Worker(Queue(db), registry, pool="process", concurrency=2)
    t = start(w, burst=True)
    wait_for(lambda: all(producer.get(i).status == "running" for i in ids))
    # The machine is shared: what a process of its own gets of a core over the same time.
    done = tmp_path / "done"
    burner = subprocess.Popen([sys.executable, "-c", BURN, str(done)], stdout=subprocess.PIPE,
                              text=True, start_new_session=True)
    t.join(30)
    done.touch()
    reference = float(burner.communicate(timeout=30)[0])
    a, b = (producer.get(i).result for i in ids)
    assert a["pid"] != b["pid"] and os.getpid() not in (a["pid"], b["pid"])
    assert max(a["start"], b["start"]) < min(a["end"], b["end"])  # their runs overlap
    # Threads of one process would share one core (the GIL): together, one process's
    # share at most. Compared together, as the load may starve one child for a while.
    assert share(a) + share(b) > 1.25 * reference, (share(a), share(b), reference)


@pytest.mark.slow
def test_an_endless_loop_past_its_timeout_is_killed_and_fails_and_the_jobs_behind_it_run(
        db, producer):
    spin = producer.enqueue("spin")
    behind = producer.enqueue_many([("pid", None) for _ in range(3)], )
    w = Worker(Queue(db), registry, pool="process", concurrency=1)
    t = start(w)
    pid = child_pid(producer, spin)
    job = wait_for(lambda: (j := producer.get(spin)).status == "dead" and j, timeout=5)
    assert "timed out after 1s" in job.error
    wait_for(lambda: not alive(pid), timeout=3)  # SIGTERM ended it
    results = [wait_for(lambda: producer.get(i).result, timeout=5) for i in behind]
    w.stop()
    t.join(10)
    assert pid not in {r["pid"] for r in results}  # a new child took the slot


def test_a_handler_stopped_at_its_timeout_runs_its_finally_blocks(db, producer, tmp_path):
    job_id = producer.enqueue("tidy", {"file": str(tmp_path / "tidy")})
    w = Worker(Queue(db), registry, pool="process", concurrency=1)
    t = start(w)
    pid = child_pid(producer, job_id)
    wait_for(lambda: not alive(pid), timeout=5)
    w.stop()
    t.join(10)
    assert "timed out after 0.5s" in producer.get(job_id).error
    assert (tmp_path / "tidy").read_text() == "cleaned up, cancelled=True"


@pytest.mark.slow
def test_a_handler_that_ignores_sigterm_is_sigkilled_after_the_grace(db, producer):
    job_id = producer.enqueue("stubborn")
    w = Worker(Queue(db), registry, pool="process", concurrency=1)
    t = start(w)
    pid = child_pid(producer, job_id)
    timed_out = wait_for(lambda: (j := producer.get(job_id)).status == "dead" and time.time())
    assert alive(pid)  # SIGTERM is ignored...
    wait_for(lambda: not alive(pid), timeout=3)  # ...and SIGKILL comes about a second later
    assert time.time() - timed_out > 0.5
    assert "timed out after 0.5s" in producer.get(job_id).error
    w.stop()
    t.join(10)


@pytest.mark.parametrize("kind, error", [
    ("exit", "worker process died: exit code 3"),
    ("segv", "worker process died: signal 11 (SIGSEGV)"),
])
@pytest.mark.slow
def test_a_child_that_dies_fails_its_own_attempt_only_and_is_replaced(db, producer, kind, error):
    napping = producer.enqueue("nap", {"s": 1.0})
    w = Worker(Queue(db), registry, pool="process", concurrency=2, poll_interval=0.005,
               idle_claim_interval=0.02)
    t = start(w)
    napper = child_pid(producer, napping)
    before = wait_for(lambda: len(pids := {p for p, _, _ in w.children()}) == 2 and pids)
    dying = producer.enqueue(kind)
    job = wait_for(lambda: (j := producer.get(dying)).status == "dead" and j, timeout=10)
    assert producer.get(napping).status == "running"  # the other child was not disturbed
    assert wait_for(lambda: producer.get(napping).result) == napper
    after = wait_for(lambda: len(pids := {p for p, _, _ in w.children()}) == 2 and pids)
    assert napper in after and len(after - before) == 1  # the dead child's slot has a new one
    later = producer.enqueue("pid")
    assert wait_for(lambda: producer.get(later).result)["pid"] in after
    w.stop()
    t.join(10)
    assert job.error == error
    attempts = producer.attempts(dying)
    assert [a.outcome for a in attempts] == ["failed"] * job.attempts  # retried like any failure
    assert job.attempts == (2 if kind == "exit" else 1)


def test_max_jobs_per_child_recycles_children(db, producer):
    ids = producer.enqueue_many([("pid", None) for _ in range(6)])
    w = burst(db, concurrency=1, max_jobs_per_child=2)
    pids = [producer.get(i).result["pid"] for i in ids]
    assert len(set(pids)) == 3 and all(pids.count(p) == 2 for p in pids), pids
    assert w.counts["succeeded"] == 6


def test_children_are_reused_across_jobs(db, producer):
    ids = producer.enqueue_many([("pid", None) for _ in range(10)])
    burst(db, concurrency=2)
    pids = {producer.get(i).result["pid"] for i in ids}
    assert len(pids) <= 2


@pytest.mark.slow_on()
def test_a_handler_in_a_child_gets_the_context_and_its_calls_reach_the_database(db, producer):
    job_id = producer.enqueue("ctx")
    burst(db, worker_id="w-child")
    job = producer.get(job_id)
    assert job.result == {"job": job_id, "attempt": 1, "worker": "w-child", "kind": "ctx",
                          "cancelled": False,
                          "refused": "progress fraction must be between 0 and 1, got 2.0"}
    assert (job.progress, job.progress_message) == (0.5, "halfway")


def test_cancelling_a_running_job_reaches_the_handler_in_its_child(db, producer):
    job_id = producer.enqueue("cancellable")
    w = Worker(Queue(db), registry, pool="process", lease=0.3)  # heartbeat every 0.1 s
    t = start(w)
    child_pid(producer, job_id)
    assert producer.cancel(job_id) == "running"
    job = wait_for(lambda: (j := producer.get(job_id)).status == "cancelled" and j)
    w.stop()
    t.join(10)
    assert "stopped on request" in producer.attempts(job_id)[-1].error


def test_a_heartbeat_in_a_child_that_finds_the_lease_lost_raises_and_the_result_is_discarded(
        db, tmp_path):
    clock = FakeClock(time.time())
    admin = Queue(db, clock=clock, backoff=Backoff(base=0.001, cap=0.001))
    go, seen = tmp_path / "go", tmp_path / "seen"
    job_id = admin.enqueue("lease-lost", {"go": str(go), "seen": str(seen)})
    # A long lease: the worker's own heartbeat (every third of it, real time) must not
    # extend or reap the job while the test does, however slowly a loaded machine runs it.
    # One slot, held by the run whose lease is lost: the worker cannot claim the job back.
    w = Worker(Queue(db, clock=clock), registry, pool="process", lease=300.0, concurrency=1)
    t = start(w)
    child_pid(admin, job_id)
    clock.advance(301)  # the lease ran out: reap it and let someone else take it
    assert admin.reap() == 1
    clock.advance(1)
    other = admin.claim("other-worker")
    assert other.id == job_id
    go.touch()
    wait_for(lambda: w.counts["lost"] == 1)
    admin.complete(other.id, other.token, "second result")
    w.stop()
    t.join(10)
    assert seen.read_text() == "LeaseLost cancelled=True"
    assert admin.get(job_id).result == "second result"


@pytest.mark.parametrize("kind, text", [
    ("boom", "ValueError: boom None"),
    ("sys.exit", "SystemExit: 3"),
    ("not-json", "not JSON-serializable"),
])
def test_what_a_handler_raises_or_returns_that_cannot_travel_fails_the_attempt_clearly(
        db, producer, kind, text):
    job_id = producer.enqueue(kind)
    burst(db, concurrency=1)
    job = producer.get(job_id)
    assert job.status == "dead" and text in job.error
    if kind != "not-json":
        assert job.error.startswith("Traceback (most recent call last):")


def test_async_handlers_run_in_a_child_on_one_event_loop_kept_across_jobs(db, producer):
    ids = producer.enqueue_many([("aio", i) for i in range(4)])
    burst(db, concurrency=1)
    results = [producer.get(i).result for i in ids]
    assert [r["double"] for r in results] == [0, 2, 4, 6]
    assert len({(r["pid"], r["loop"]) for r in results}) == 1


def test_stop_lets_running_handlers_finish_within_the_grace_and_no_child_is_left(db, producer):
    ids = producer.enqueue_many([("nap", {"s": 0.5}) for _ in range(2)])
    w = Worker(Queue(db), registry, pool="process", concurrency=2, grace=10)
    t = start(w)
    pids = [child_pid(producer, i) for i in ids]
    w.stop()
    t.join(10)
    assert not t.is_alive()
    assert [producer.get(i).status for i in ids] == ["succeeded", "succeeded"]
    assert not any(alive(p) for p in pids)


def test_stop_past_the_grace_releases_the_jobs_and_kills_their_children(db, producer):
    ids = producer.enqueue_many([("nap", {"s": 30}) for _ in range(2)])
    w = Worker(Queue(db), registry, pool="process", concurrency=2, grace=0.2)
    t = start(w)
    pids = [child_pid(producer, i) for i in ids]
    before = descendants(os.getpid())
    started = time.monotonic()
    w.stop()
    t.join(10)
    assert time.monotonic() - started < 3  # the grace, then SIGTERM: no 30 s nap
    assert [(producer.get(i).status, producer.get(i).attempts) for i in ids] == [("pending", 0)] * 2
    assert set(pids) <= before
    assert not any(alive(p) for p in pids)
    assert not any(alive(p) for p in before if p not in descendants(os.getpid()) | {os.getpid()})


def test_after_run_returns_no_process_of_the_pool_is_left(db, producer):
    before = descendants(os.getpid())
    producer.enqueue_many([("pid", None) for _ in range(4)])
    seen = set()
    w = Worker(Queue(db), registry, pool="process", concurrency=3)
    t = start(w)
    wait_for(lambda: len(w.children()) == 3 and all(s == "idle" for _, s, _ in w.children()))
    seen = descendants(os.getpid()) - before  # the fork server and the three children
    assert len(seen) == 4
    w.stop()
    t.join(10)
    wait_for(lambda: not any(alive(p) for p in seen), timeout=5)


def test_the_fork_server_loads_what_children_run_and_not_the_worker_runtime():
    # the server imports child.py once for all children; the Worker's threads, claimer and
    # completer are the parent's, and were a third of the server's start before its first child
    code = ("import sys\nimport jobq_core.worker.child\n"
            "print('jobq_core.worker.worker' in sys.modules)\n"
            "from jobq_core.worker import Worker\nprint(Worker.__module__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.split() == ["False", "jobq_core.worker.worker"]


def test_a_registry_that_children_cannot_import_is_refused_when_the_worker_is_made(db):
    local = Registry()
    local.task("x")(lambda p: None)
    with Queue(db) as q, pytest.raises(ValueError, match="needs a registry the child processes "
                                                         "can import by name"):
        Worker(q, local, pool="process")


def test_an_app_that_fails_to_import_in_the_children_makes_run_raise_before_registering(
        db, producer):
    with Queue(db) as q:
        w = Worker(q, registry, pool="process", app="no_such_module_here:registry")
        with pytest.raises(JobqError, match="the worker's child processes cannot start: "
                                            "importing no_such_module_here:registry failed: "
                                            "ModuleNotFoundError"):
            w.run(handle_signals=False)
    assert producer.workers() == []


@pytest.mark.parametrize("kwargs, message", [
    ({"pool": "fork"}, "pool must be 'thread' or 'process', got 'fork'"),
    ({"max_jobs_per_child": 5}, "max_jobs_per_child applies to pool='process' only"),
    ({"pool": "process", "max_jobs_per_child": 0},
     "max_jobs_per_child must be an integer >= 1, got 0"),
])
def test_a_worker_refuses_a_bad_pool_configuration_naming_the_wrong_value(db, kwargs, message):
    with Queue(db) as q, pytest.raises(ValueError, match=message):
        Worker(q, registry, **kwargs)


SCRIPT = """import multiprocessing, sys
from jobq_core import Queue, Registry, Worker
registry = Registry()
SELF = sys.modules[__name__]  # a script may name itself so, as multiprocessing's users do
registry.task("whoami")(lambda payload: getattr(SELF, "registry", None) is registry)
if __name__ == "__main__":
    with Queue(sys.argv[1]) as q:
        job_id = q.enqueue("whoami")
        Worker(q, registry, pool="process").run(burst=True, handle_signals=False)
        job = q.get(job_id)
        print(job.status, job.result)
"""


def test_a_script_whose_registry_is_in_its_main_runs_in_children_as_it_reads_itself(
        db, tmp_path):
    # the children load the script again by path; multiprocessing, imported by it first,
    # must not swap the module being loaded for another under the script's feet
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    out = subprocess.run([sys.executable, str(script), db],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["succeeded", "True"]


def test_an_error_text_with_a_lone_surrogate_is_the_handlers_error_not_a_dead_child(
        db, producer):
    job_id = producer.enqueue("unstorable")
    w = burst(db, concurrency=1)
    job = producer.get(job_id)
    assert job.status == "dead" and w.counts["dead"] == 1
    assert job.error.rstrip().endswith("ValueError: file-\\udcff"), job.error
