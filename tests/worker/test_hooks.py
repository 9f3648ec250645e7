"""Hooks around runs (``Registry.before_run``, ``after_run``, ``on_dead``), on every store:
called with the run's ``Job``, its context and its outcome, where the handler runs (a
handler thread, the event loop, a process-pool child, the test's thread in
``testing.drain``); a hook that raises is logged and changes nothing. The handlers and hooks
are in ``hook_tasks.py``: they write what they saw to a file the test reads."""
from __future__ import annotations

import json
import logging
import os

import pytest

from jobq_core import Queue, Registry, RunStatus, Worker
from jobq_core.common.error_groups import error_line
from jobq_core.testing import drain

from .hook_tasks import registry

POOLS = ["thread", pytest.param("process", marks=pytest.mark.slow_on(
    "postgresql", why="the child's side is the same on every store"))]


def burst(db: str, pool: str = "thread") -> Worker:
    with Queue(db) as q:
        w = Worker(q, registry, pool=pool, concurrency=2)
        w.run(burst=True, handle_signals=False)
    return w


def seen(log) -> dict[int, list[dict]]:
    """What the hooks wrote, by job id, in order."""
    by_job: dict[int, list[dict]] = {}
    for line in log.read_text().splitlines():
        record = json.loads(line)
        by_job.setdefault(record["job"], []).append(record)
    return by_job


@pytest.mark.parametrize("pool", POOLS)
@pytest.mark.parametrize("kind", ["hooked", "hooked.async"])
def test_hooks_get_the_job_its_context_and_its_outcome_where_the_handler_runs(
        db, producer, tmp_path, pool, kind):
    log = tmp_path / "hooks.jsonl"
    ok = producer.enqueue(kind, {"log": str(log), "n": 7})
    retried = producer.enqueue(kind, {"log": str(log), "raise": "retry"})
    gave_up = producer.enqueue(kind, {"log": str(log), "raise": "giveup"})
    burst(db, pool)
    hooks = seen(log)
    assert [h["hook"] for h in hooks[ok]] == ["before", "after"]
    assert [h["hook"] for h in hooks[retried]] == ["before", "after"]
    assert [h["hook"] for h in hooks[gave_up]] == ["before", "dead", "after"]
    before, after = hooks[ok]
    assert (before["ctx"], before["attempt"], before["kind"]) == (ok, 1, kind)
    assert (after["ctx"], after["status"], after["failed"]) == (ok, "succeeded", False)
    handler = producer.get(ok).result
    assert after["result"] == handler and handler["n"] == 7
    assert handler["request"] == f"req-{ok}"  # a contextvar before_run set
    after = hooks[retried][-1]
    assert (after["status"], after["failed"], after["retry_in"]) == ("retried", True, 60)
    assert after["error"] == "Retry: again in 60s"
    assert producer.get(retried).status == "pending"
    dead, after = hooks[gave_up][1:]
    job = producer.get(gave_up)
    assert job.status == "dead" and dead["error"] == error_line(job.error) == \
        "GiveUp: no such customer"
    assert (after["status"], after["error"]) == ("dead", "GiveUp: no such customer")
    # where: the handler's own thread (or the event loop's), or its child process
    threads = {h["thread"] for records in hooks.values() for h in records
               if h["hook"] == "before"}
    if pool == "process":
        assert {h["pid"] for records in hooks.values() for h in records} - {os.getpid()} \
            == {h["pid"] for records in hooks.values() for h in records}
    elif kind == "hooked.async":
        assert threads == {"jobq-asyncio"} and handler["thread"] == "jobq-asyncio"
    else:
        assert all(t.startswith("jobq-handler-") for t in threads)
        assert hooks[ok][0]["thread"] == hooks[ok][1]["thread"] == handler["thread"]


def test_a_failure_with_attempts_left_is_told_retried_and_written_so(db, producer,
                                                                     tmp_path):
    log = tmp_path / "hooks.jsonl"
    job_id = producer.enqueue("hooked", {"log": str(log), "raise": "value"})
    burst(db)
    after = seen(log)[job_id][-1]
    # the task has no backoff of its own: the queue's decides the delay when it is written
    assert (after["status"], after["retry_in"]) == ("retried", None)
    assert after["error"] == "Traceback (most recent call last):"
    job = producer.get(job_id)
    assert (job.status, job.attempts) == ("pending", 1)


@pytest.mark.parametrize("pool", POOLS)
def test_a_hook_that_raises_is_logged_and_changes_no_outcome(db, producer, tmp_path, pool,
                                                             caplog):
    log = tmp_path / "hooks.jsonl"
    ok = producer.enqueue("hooked", {"log": str(log), "n": 1, "hook_raises": True})
    gave_up = producer.enqueue("hooked", {"log": str(log), "raise": "giveup",
                                          "hook_raises": True})
    with caplog.at_level(logging.ERROR, logger="jobq.worker"):
        w = burst(db, pool)
    assert producer.get(ok).status == "succeeded" and producer.get(ok).result["n"] == 1
    assert producer.get(gave_up).status == "dead"
    assert error_line(producer.get(gave_up).error) == "GiveUp: no such customer"
    assert (w.counts["succeeded"], w.counts["dead"]) == (1, 1)
    assert [h["hook"] for h in seen(log)[gave_up]] == ["before", "dead", "after"]
    if pool == "thread":  # a child's log lines go to its own stderr
        raised = [r.getMessage() for r in caplog.records if "the hook " in r.getMessage()]
        assert len(raised) == 5, raised  # before x2, on_dead, after x2
        assert any(f"job={ok} kind=hooked: the hook before raised" in m for m in raised)


@pytest.mark.parametrize("kind", ["hooked", "hooked.async"])
def test_drain_runs_the_hooks_in_the_tests_thread(queue, clock, tmp_path, kind):
    log = tmp_path / "hooks.jsonl"
    ok = queue.enqueue(kind, {"log": str(log), "n": 3})
    failing = queue.enqueue(kind, {"log": str(log), "raise": "value"})
    ran = drain(queue, registry, clock=clock)
    assert [(r.job_id, r.status) for r in ran] == [(ok, "succeeded"), (failing, "pending"),
                                                   (failing, "dead")]
    hooks = seen(log)
    assert [h["status"] for h in hooks[failing] if h["hook"] == "after"] == \
        ["retried", "dead"]
    assert [h["hook"] for h in hooks[failing]] == ["before", "after", "before", "dead",
                                                   "after"]
    stored = queue.get(failing).error
    assert hooks[failing][3]["error"] == stored.split("\n", 1)[0]  # the error stored
    assert error_line(stored) == "ValueError: bad input"
    assert queue.get(ok).result["request"] == f"req-{ok}"
    assert {h["pid"] for records in hooks.values() for h in records} == {os.getpid()}


def test_a_registry_without_hooks_leaves_its_tasks_without_and_a_later_hook_reaches_them():
    r = Registry()

    @r.task("early")
    def early(payload):
        pass

    assert early.hooks is None and r.hooks is None  # a run costs one test of it

    @r.after_run
    def after(job, ctx, outcome):
        pass

    @r.task("late")
    def late(payload):
        pass

    assert early.hooks is r.hooks and late.hooks is r.hooks
    assert r.hooks.after_run == [after] and r.hooks.before_run == []
    with pytest.raises(TypeError, match="a before_run hook must be callable"):
        r.before_run("nope")
    assert RunStatus.DEAD == "dead"
