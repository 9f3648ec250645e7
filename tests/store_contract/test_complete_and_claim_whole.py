"""``complete_and_claim`` is one outcome: when any part of it fails (a dependent's row, or
SQLite's write lock, held by another connection past ``busy_timeout``), nothing it was
asked to write is committed: no completion, no claim. A caller told "unavailable" can then
write the batch again without finding its own completions fenced out or its claims
orphaned."""
from __future__ import annotations

import pytest
from stores import AppDB

from jobq_core import DatabaseUnavailable, JobStatus


def _batch(queue):
    """Two running jobs of worker "w" (``parent`` has a dependent, ``plain`` none) and
    three pending jobs behind them; (parent, plain, dependent, pending ids)."""
    parent = queue.enqueue("parent")
    plain = queue.enqueue("plain")
    dependent = queue.enqueue("dependent", after=[parent])
    pending = [queue.enqueue("more") for _ in range(3)]
    claimed = {j.id: j for j in queue.claim_many("w", 2)}
    assert set(claimed) == {parent, plain}
    return claimed[parent], claimed[plain], dependent, pending


def test_a_batch_whose_settling_times_out_commits_neither_its_completions_nor_its_claim(
        open_queue, database):
    queue = open_queue(busy_timeout=0.2)
    parent, plain, dependent, pending = _batch(queue)
    items = [(parent.id, parent.token, "p"), (plain.id, plain.token, "x")]
    with AppDB(database, timeout=0.2) as holder:
        # the dependent's row (PostgreSQL), or the write lock (SQLite), held past the timeout
        holder.execute("UPDATE jobq_jobs SET priority=priority WHERE id=?", (dependent,))
        with pytest.raises(DatabaseUnavailable):
            queue.complete_and_claim(items, "w", 3)
        holder.rollback()
    for job in (parent, plain):  # still running under the claim's token: nothing completed
        now = queue.get(job.id)
        assert (now.status, now.token, now.result) == (JobStatus.RUNNING, job.token, None)
    assert [queue.get(i).status for i in pending] == [JobStatus.PENDING] * 3  # none claimed
    assert queue.get(dependent).status == JobStatus.WAITING

    accepted, jobs = queue.complete_and_claim(items, "w", 3)  # the lock gone: all of it
    assert accepted == [True, True]
    assert {j.id for j in jobs} == {dependent, *pending[:2]}
    assert queue.get(plain.id).result == "x"


def test_a_fenced_out_completion_is_refused_alone(queue):
    """A completion fenced out (a token its job is not running under) in a batch: the
    others and the claim are written, it alone is reported as not accepted."""
    parent, plain, dependent, pending = _batch(queue)
    stale = (pending[2], plain.token, "late")
    accepted, jobs = queue.complete_and_claim(
        [(parent.id, parent.token, "p"), stale, (plain.id, plain.token, "x")], "w", 2)
    assert accepted == [True, False, True]
    assert [j.id for j in jobs] == [dependent, pending[0]]
    assert queue.get(plain.id).result == "x"
