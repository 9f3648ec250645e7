"""Retention and the maintenance leader, on both stores: terms kept in the database, old
jobs deleted in batches while a Worker drains, one leader per database, taken over when
its lease runs out."""
from __future__ import annotations

import threading
import time

import pytest

from jobq_core import Queue, Registry, Worker
from jobq_core.maintenance import Elector, Pruner
from jobq_core.testing import wait_for

from .conftest import start

DAY = 86400.0


def test_retention_has_defaults_keeps_what_is_set_and_refuses_bad_terms(queue):
    r = queue.retention()
    assert (r.succeeded, r.cancelled, r.dead, r.set) == (7 * DAY, 7 * DAY, 30 * DAY, ())
    r = queue.set_retention(succeeded=3600, dead=None)
    assert (r.succeeded, r.cancelled, r.dead) == (3600.0, 7 * DAY, None)
    assert set(r.set) == {"succeeded", "dead"}
    r = queue.set_retention(cancelled=60)  # the others are left as they are
    assert (r.succeeded, r.cancelled, r.dead) == (3600.0, 60.0, None)
    with pytest.raises(ValueError, match="retention of dead jobs"):
        queue.set_retention(dead=-1)
    with pytest.raises(TypeError, match="retention of succeeded jobs"):
        queue.set_retention(succeeded="7d")
    assert queue.retention().dead is None  # nothing written by a refused call


def _finish(q: Queue, job_id: int, status: str) -> None:
    """End a job as its worker would have: succeeded, dead or cancelled."""
    if status == "cancelled":
        q.cancel(job_id)
        return
    job = q.claim("w")
    assert job is not None and job.id == job_id
    if status == "succeeded":
        q.complete(job.id, job.token)
    else:
        q.give_up(job.id, job.token, "no")


def test_the_pruner_deletes_each_status_past_its_term_and_keeps_what_jobs_wait_on(
        queue, clock):
    ids = {}
    for status in ("succeeded", "cancelled", "dead"):
        ids[status] = queue.enqueue("old." + status)
        _finish(queue, ids[status], status)
    needed = queue.enqueue("needed")
    _finish(queue, needed, "succeeded")
    waiting = queue.enqueue("after", after=[needed, queue.enqueue("blocker", delay=DAY * 9)])
    assert queue.get(waiting).status == "waiting"
    queue.set_retention(succeeded=DAY, cancelled=2 * DAY, dead=None)
    clock.advance(1.5 * DAY)
    assert Pruner(queue, batch=1).run_once() == {"succeeded": 1}  # not the one needed
    clock.advance(DAY)
    assert Pruner(queue).run_once() == {"cancelled": 1}
    assert queue.get(ids["dead"]) is not None  # dead: kept for ever
    queue.set_retention(dead=DAY)
    assert Pruner(queue).run_once() == {"dead": 1}  # not the one a waiting job needs
    assert queue.get(needed) is not None


@pytest.mark.slow
def test_retention_deletes_in_batches_while_a_worker_drains_with_no_claim_stalled(
        adapter, db):
    """50,000 succeeded jobs a month old, retention set to a day, and 1,500 jobs to run:
    the worker's own maintenance deletes the old ones (a batch at a time) while it drains
    the new ones, and no claim waits behind a deletion: the gap between two consecutive
    starts stays far below what one statement deleting them all takes, above the longest
    gap of the same drain with nothing to delete (the machine's own stalls, measured first)."""
    old, new = 50_000, 1_500
    registry = Registry()
    registry.task("new")(lambda payload: time.sleep(0.01))
    registry.task("control")(lambda payload: time.sleep(0.01))

    def longest_gap(kind: str) -> float:
        starts = sorted(j.started_at for j in q.list("succeeded", kind=kind, limit=new,
                                                     payloads=False))
        assert len(starts) == new
        return max(b - a for a, b in zip(starts, starts[1:]))

    def finished_a_month_ago(kind: str) -> None:
        q.enqueue_many([(kind, None)] * old)
        conn = adapter.connect(db, timeout=30)
        try:
            conn.execute(adapter.placeholders(
                "UPDATE jobq_jobs SET status='succeeded', finished_at=?, started_at=? "
                "WHERE kind=?"), (time.time() - 30 * DAY, time.time() - 30 * DAY, kind))
            conn.commit()
        finally:
            conn.close()

    with Queue(db) as q:
        # What one statement deleting them all takes here, now (a loaded machine's stalls
        # lengthen it and the gaps alike): the gaps must stay well below it.
        finished_a_month_ago("whole")
        conn = adapter.connect(db, timeout=30)
        try:
            began = time.monotonic()
            conn.execute("DELETE FROM jobq_jobs WHERE kind='whole'")
            conn.commit()
            whole = time.monotonic() - began
        finally:
            conn.close()
        finished_a_month_ago("old")
        # The control drain runs over the same table, the old jobs kept (their pending
        # index entries, dead since the UPDATE above, cost PostgreSQL's first claims a
        # walk past them: 0.3-0.6 s, a cost of this setup, not of retention).
        q.set_retention(succeeded=100 * DAY)
        q.enqueue_many([("control", None)] * new)
        Worker(q, registry, concurrency=4, lease=30).run(burst=True, handle_signals=False)
        stalls = longest_gap("control")
        assert q.count("succeeded", kind="old") == old
        q.set_retention(succeeded=DAY)
        q.enqueue_many([("new", None)] * new)
        worker = Worker(q, registry, concurrency=4, lease=30)
        t = start(worker)
        overlapped = False  # seen: new jobs run while old ones were being deleted
        deadline = time.monotonic() + 120
        # Watched through a Queue of its own: on PostgreSQL the Worker's pool holds two
        # connections, and counts over 50,000 rows taking one of them every 20 ms made
        # the Worker's threads wait for a connection (up to 37 ms at a time on a loaded
        # machine), a cost the control drain, not watched, never paid.
        with Queue(db) as watcher:
            while watcher.count("succeeded", kind="new") < new and time.monotonic() < deadline:
                left = watcher.count("succeeded", kind="old")
                overlapped = overlapped or (0 < left < old and watcher.count(
                    kind="new", status="succeeded") > 0)
                time.sleep(0.05)
            wait_for(lambda: watcher.count("succeeded", kind="old") == 0, timeout=120)
        worker.stop()
        t.join(30)
        gap = longest_gap("new")
    assert overlapped
    # (plus what the leader's table care may hold writers back by design: on SQLite, its
    # checkpoint of the WAL the deletions grew). Where one DELETE of all is quick
    # (PostgreSQL: 0.04-0.08 s, and no deletion there blocks a claim) the floor bounds
    # the machine's jitter alone: 0.35 s was seen beside a 0.07 s control on a loaded run.
    bound = max(0.5, whole / 2) + adapter.writers_held + stalls
    assert gap < bound, (f"a claim stalled {gap:.3f}s; one DELETE of all: {whole:.3f}s, "
                         f"the longest gap with nothing to delete {stalls:.3f}s")


def test_one_worker_leads_and_another_takes_over_when_its_lease_runs_out(queue, clock):
    a, b = Elector(queue, "a", term=30), Elector(queue, "b", term=30)
    assert a.run_once() and a.leading
    assert not b.run_once() and not b.leading
    assert queue.leader().worker == "a"
    elected = queue.leader().elected_at
    clock.advance(20)
    assert a.run_once()  # renewed: the same election, a later expiry
    assert (queue.leader().elected_at, queue.leader().expires_at) == (elected, clock.now() + 30)
    clock.advance(29)
    assert not b.run_once()
    clock.advance(2)  # a's lease ran out: it died, or froze
    assert b.run_once() and queue.leader().worker == "b"
    assert not a.run_once() and not a.leading  # back from a freeze: it no longer leads
    b.resign()
    assert queue.leader() is None
    assert a.run_once()  # at once, not a term later


def test_a_worker_stopping_gives_the_lead_up_and_the_other_takes_it_at_its_next_beat(db):
    registry = Registry()
    registry.task("noop")(lambda payload: None)
    with Queue(db) as q1, Queue(db) as q2:
        w1 = Worker(q1, registry, concurrency=1, lease=0.9, worker_id="first")
        t1 = start(w1)
        wait_for(lambda: w1.leading)
        w2 = Worker(q2, registry, concurrency=1, lease=0.9, worker_id="second")
        t2 = start(w2)
        wait_for(lambda: q1.workers() and len(q1.workers()) == 2)
        assert not w2.leading and q1.leader().worker == "first"
        w1.stop()
        t1.join(10)
        wait_for(lambda: w2.leading, timeout=5)
        assert q1.leader().worker == "second"
        w2.stop()
        t2.join(10)
        assert q1.leader() is None


def test_the_monitors_workers_view_marks_the_leader_while_its_lease_holds(queue, clock):
    from jobq_core.presentation.views import VIEWS
    from jobq_core.presentation.views.filters import parse_filter
    from jobq_core.presentation.views.reading import take

    for worker_id in ("a", "b"):
        queue.register_worker(worker_id, host="h", pid=1, queues=None, concurrency=1,
                              beat_interval=10, lease=30)
    Elector(queue, "b", term=30).run_once()
    view = VIEWS["workers"]

    def ids() -> list[str]:
        snap = take(queue, view, parse_filter(""), now=clock.now())
        return [row.cells[0].plain for row in view.rows(snap, wide=True, beat=10)]

    assert ids() == ["a", "b (leader)"]
    clock.advance(31)  # its lease ran out: nobody leads
    assert ids() == ["a", "b"]
