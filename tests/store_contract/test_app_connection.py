"""Enqueue and fenced completion on the application's own connection, inside its
transaction (``job_insert_many_on``, ``job_complete_on``): a rollback leaves no trace, a
commit makes the job and the application's writes appear together, a fenced-out
completion raises LeaseLost, and a connection jobq cannot use is refused before anything
is written."""
from __future__ import annotations

import pytest
from stores import AppDB

from jobq_core import LeaseLost, UnusableConnection


@pytest.fixture
def app(database):
    """The application's connection to the queue's database, with its own table."""
    with AppDB(database) as db:
        db.create_accounts(rows=3)
        yield db


@pytest.fixture
def other_database(adapter, tmp_path, queue):
    """Another database of the same kind, with jobq's tables in it too."""
    from jobq_core import Queue

    (tmp_path / "other").mkdir()
    with adapter.database(tmp_path / "other") as url:
        with Queue(url) as q:
            q.check()  # its tables: a PostgreSQL queue connects on first use
        yield url


def _pay(app, account: int) -> None:
    app.execute("UPDATE accounts SET n = n + 1 WHERE id = ?", (account,))


# -- enqueue -------------------------------------------------------------------------------

def test_a_rolled_back_enqueue_leaves_no_job_and_a_committed_one_leaves_exactly_one(queue, app):
    _pay(app, 1)
    queue.enqueue("receipt", {"account": 1}, conn=app.conn)
    app.rollback()
    assert queue.list() == [] and app.counts()[1] == 0

    _pay(app, 1)
    job_id = queue.enqueue("receipt", {"account": 1}, conn=app.conn)
    app.commit()
    [job] = queue.list()
    assert job.id == job_id and job.payload == {"account": 1} and job.status == "pending"
    assert app.counts()[1] == 1


def test_an_enqueued_job_is_invisible_to_others_until_the_application_commits(queue, app,
                                                                             open_queue):
    # (Only read: on SQLite a claim is a write, and waits for the application's commit.)
    other = open_queue()
    _pay(app, 1)
    job_id = queue.enqueue("receipt", conn=app.conn)
    assert other.list() == [] and other.stats().pending == 0
    app.commit()
    assert other.claim("w").id == job_id


def test_a_commit_of_the_applications_transaction_wakes_a_watch(queue, app, open_queue):
    watch = open_queue().watch()
    try:
        assert watch.wait(0) is False
        queue.enqueue("receipt", conn=app.conn)
        app.commit()
        assert watch.wait(5) is True
    finally:
        watch.close()


def test_enqueue_many_on_the_connection_keeps_order_unique_keys_and_big_payloads(queue, app):
    big = {"blob": "é" * 4000}
    ids = queue.enqueue_many([
        ("a", 1),
        {"kind": "b", "unique_key": "k1"},
        {"kind": "c", "payload": big, "queue": "bulk", "priority": 5},
        {"kind": "d", "unique_key": "k1"},  # held by an earlier job of the batch
        ("e", None),
    ], conn=app.conn)
    assert ids[3] == ids[1] and len(set(ids)) == 4 and ids == sorted(ids[:3]) + ids[3:]
    app.commit()
    assert queue.get(ids[2]).payload == big and queue.get(ids[2]).queue == "bulk"
    assert [j.kind for j in queue.list(status="pending")] == ["c", "a", "b", "e"]
    assert queue.enqueue("x", unique_key="k1") == ids[1]  # the key is live for everyone


def test_an_enqueue_on_the_connection_with_a_live_unique_key_yields_that_job(queue, app):
    held = queue.enqueue("a", unique_key="once")
    assert queue.enqueue("a", unique_key="once", conn=app.conn) == held
    app.commit()
    assert len(queue.list()) == 1


def test_an_application_row_factory_does_not_disturb_jobq(queue, app):
    app.use_dict_rows()
    ids = queue.enqueue_many([("a", 1), {"kind": "b", "unique_key": "u"}], conn=app.conn)
    app.commit()
    assert [j.id for j in queue.list(status="pending")] == ids


# -- refused before anything is written ---------------------------------------------------

def test_a_connection_to_another_database_is_refused_and_nothing_is_written(queue, app,
                                                                            other_database):
    from jobq_core import Queue

    with AppDB(other_database) as elsewhere:
        with pytest.raises(UnusableConnection, match="not to this queue's database"):
            queue.enqueue("receipt", conn=elsewhere.conn)
        with pytest.raises(UnusableConnection, match="not to this queue's database"):
            queue.enqueue_many([("a", 1)], conn=elsewhere.conn)
        queue.enqueue("k")
        job = queue.claim("w")
        with pytest.raises(UnusableConnection):
            queue.complete(job.id, job.token, conn=elsewhere.conn)
        elsewhere.commit()
    with Queue(other_database) as other:
        assert other.list() == []
    assert queue.get(job.id).status == "running"


def test_a_closed_connection_is_refused(queue, database):
    db = AppDB(database)
    db.close()
    with pytest.raises(UnusableConnection, match="closed"):
        queue.enqueue("receipt", conn=db.conn)
    assert queue.list() == []


def test_an_autocommit_connection_without_a_transaction_is_refused(queue, app):
    app.autocommit()
    with pytest.raises(UnusableConnection, match="autocommit"):
        queue.enqueue("receipt", conn=app.conn)
    assert queue.list() == []
    # ... but a transaction opened on it explicitly is joined
    with app.explicit_transaction():
        queue.enqueue("receipt", conn=app.conn)
    assert queue.list() == []


def test_something_that_is_not_a_connection_is_refused(queue):
    with pytest.raises(UnusableConnection, match="conn= must be"):
        queue.enqueue("receipt", conn=object())
    assert queue.list() == []


# -- fenced completion ---------------------------------------------------------------------

def test_a_committed_completion_succeeds_the_job_in_the_same_commit(queue, app, open_queue):
    queue.enqueue("pay", {"account": 2})
    job = queue.claim("w")
    _pay(app, 2)
    queue.complete(job.id, job.token, {"paid": True}, conn=app.conn)
    assert open_queue().get(job.id).status == "running"  # not before the commit
    app.commit()
    done = queue.get(job.id)
    assert done.status == "succeeded" and done.result == {"paid": True}
    assert app.counts()[2] == 1


def test_a_completion_on_the_connection_settles_its_dependents_with_the_same_commit(queue, app):
    a = queue.enqueue("pay")
    b = queue.enqueue("receipt", after=[a])
    job = queue.claim("w")
    queue.complete(job.id, job.token, conn=app.conn)
    app.rollback()
    assert [queue.get(i).status for i in (a, b)] == ["running", "waiting"]
    queue.complete(job.id, job.token, conn=app.conn)
    app.commit()
    assert [queue.get(i).status for i in (a, b)] == ["succeeded", "pending"]


def test_a_rolled_back_completion_leaves_the_job_running_under_its_token(queue, app):
    queue.enqueue("pay")
    job = queue.claim("w")
    _pay(app, 2)
    queue.complete(job.id, job.token, conn=app.conn)
    app.rollback()
    assert queue.get(job.id).status == "running" and app.counts()[2] == 0
    queue.complete(job.id, job.token)  # the run still owns it
    assert queue.get(job.id).status == "succeeded"


def test_a_completion_fenced_out_raises_lease_lost_and_writes_nothing(queue, app, clock):
    queue.enqueue("pay")
    zombie = queue.claim("zombie", lease=10)
    clock.advance(11)
    assert queue.reap() == 1
    clock.advance(3600)
    fresh = queue.claim("fresh")
    before = queue.get(fresh.id)
    _pay(app, 3)
    with pytest.raises(LeaseLost):
        queue.complete(zombie.id, zombie.token, conn=app.conn)
    app.rollback()
    assert queue.get(fresh.id) == before and app.counts()[3] == 0


def test_a_second_completion_in_one_transaction_is_fenced_out(queue, app):
    queue.enqueue("pay")
    job = queue.claim("w")
    queue.complete(job.id, job.token, conn=app.conn)
    with pytest.raises(LeaseLost):
        queue.complete(job.id, job.token, conn=app.conn)
    app.commit()
    assert queue.get(job.id).status == "succeeded"


# -- workflows ------------------------------------------------------------------------------

def _finish(queue, job_id: int) -> None:
    job = queue.claim("w")
    assert job.id == job_id
    queue.complete(job.id, job.token)


def test_a_chain_on_the_connection_commits_or_rolls_back_with_the_application(queue, app):
    _pay(app, 1)
    queue.chain([("fetch", 1), ("parse", 2)], conn=app.conn)
    app.rollback()
    assert queue.list() == [] and app.counts()[1] == 0

    _pay(app, 1)
    first, second = queue.chain([("fetch", 1), ("parse", 2)], conn=app.conn)
    app.commit()
    assert [(j.id, j.status) for j in queue.list()] == [(second, "waiting"), (first, "pending")]
    assert [link.job_id for link in queue.dependencies(second).waits_on] == [first]
    _finish(queue, first)
    assert queue.get(second).status == "pending" and app.counts()[1] == 1


def test_a_group_and_an_enqueue_after_on_the_connection_wait_as_without_it(queue, app):
    done = queue.enqueue("earlier")
    _finish(queue, done)
    members, then = queue.group([("part", 1), ("part", 2)], then=("sum", None), conn=app.conn)
    ready = queue.enqueue("after-done", after=[done], conn=app.conn)
    blocked = queue.enqueue("after-then", after=[then], conn=app.conn)
    app.commit()
    assert {j.id: j.status for j in queue.list()} == {
        **{m: "pending" for m in members}, then: "waiting", ready: "pending",
        blocked: "waiting", done: "succeeded"}
    for member in members:
        _finish(queue, member)
    assert queue.get(then).status == "pending" and queue.get(blocked).status == "waiting"


def test_a_missing_job_to_wait_on_is_refused_before_anything_is_written(queue, app):
    from jobq_core import JobNotFound

    _pay(app, 1)
    with pytest.raises(JobNotFound):
        queue.enqueue("orphan", after=[424242], conn=app.conn)
    app.commit()  # the application carries on: its own write commits, and no job
    assert queue.list() == [] and app.counts()[1] == 1
