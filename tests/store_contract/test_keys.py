"""Concurrency keys: ``key_concurrency`` and ``ordered``, enforced by the claim statement on
every store. Several tests open a second Queue (another connection, as another process
would); the claim shapes are all exercised (one queue named, several, every queue)."""
from __future__ import annotations

import threading
from collections import Counter

import pytest

from jobq_core import LeaseLost, Rate
from jobq_core.common.checks import MAX_NAME_BYTES
from jobq_core.store import controls

SHAPES = {"one": ["api"], "several": ["api", "other"], "every": None}


@pytest.fixture
def fresh(monkeypatch):
    """Every claim reads the queue controls again (a worker does within a second)."""
    monkeypatch.setattr(controls, "TTL", 0.0)


def keyed(key: str | None, n: int = 1, queue: str = "api", **options) -> list[dict]:
    return [{"kind": "k", "queue": queue, "key": key, **options} for _ in range(n)]


def running_per_key(queue, name: str = "api") -> Counter:
    return Counter(j.key for j in queue.list("running", queue=name) if j.key is not None)


def test_a_job_carries_its_key_and_a_job_without_one_has_none(queue):
    a = queue.enqueue("k", key="customer:7")
    b = queue.enqueue("k")
    [c] = queue.enqueue_many([{"kind": "k", "key": "customer:8"}])
    d, e = queue.chain([{"kind": "k", "key": "c9"}, ("k", None)])
    assert [queue.get(i).key for i in (a, b, c, d, e)] == ["customer:7", None, "customer:8",
                                                           "c9", None]
    assert queue.claim("w").key == "customer:7"


def test_a_task_handle_and_a_group_pass_the_key_on(queue):
    from jobq_core import Registry

    registry = Registry()

    @registry.task("sync", queue="api")
    def sync(payload, ctx):
        return None

    one = sync.enqueue(queue, {"n": 1}, key="c7")
    many = sync.enqueue_many(queue, [{"n": 2}, {"n": 3}], key="c8")
    members, then = queue.group([{"kind": "k", "key": "g"}], then={"kind": "k", "key": "t"})
    assert [queue.get(i).key for i in (one, *many, *members, then)] == ["c7", "c8", "c8", "g",
                                                                         "t"]


def test_listings_count_and_dead_groups_narrow_to_one_key_exactly(queue):
    mine = queue.enqueue_many(keyed("customer:7", 2))
    queue.enqueue_many(keyed("customer:70") + keyed(None))
    assert {j.id for j in queue.list(key="customer:7")} == set(mine)
    assert queue.count("pending", key="customer:7") == 2
    assert queue.list(key="customer") == []  # a key matches whole, never as a prefix
    for key in ("customer:7", "customer:70"):  # one dead job each
        [job_id] = queue.enqueue_many(keyed(key, queue="dlq", max_attempts=1))
        job = queue.claim("w", queues=["dlq"])
        assert job.id == job_id
        queue.fail(job.id, job.token, "HTTP 502")
    [group] = queue.dead_groups(key="customer:7")
    assert group.count == 1 == queue.count("dead", key="customer:7")


@pytest.mark.parametrize("bad", ["", "x" * (MAX_NAME_BYTES + 1), "a\x00b", 7])
def test_a_key_is_checked_like_the_other_names_and_nothing_is_written(queue, bad):
    with pytest.raises(ValueError, match="^key must be|^key holds"):
        queue.enqueue("k", key=bad)
    with pytest.raises(ValueError, match="^key "):
        queue.enqueue_many([("k", 1), {"kind": "k", "key": bad}])
    assert queue.count() == 0


@pytest.mark.parametrize("shape", SHAPES)
def test_a_batch_claim_takes_at_most_n_jobs_of_one_key(queue, fresh, shape):
    queue.enqueue_many(keyed("a", 5) + keyed("b", 5) + keyed(None, 2)
                       + keyed("a", 3, queue="other"))
    queue.set_limit("api", key_concurrency=2)
    claimed = queue.claim_many("w", 50, queues=SHAPES[shape])
    api = Counter(j.key for j in claimed if j.queue == "api")
    assert api == {"a": 2, "b": 2, None: 2}
    # another queue's jobs of the same key are not held back by api's limit
    assert sum(j.queue == "other" for j in claimed) == (0 if shape == "one" else 3)
    assert queue.claim_many("w", 50, queues=SHAPES[shape]) == []


@pytest.mark.parametrize("shape", SHAPES)
def test_a_key_frees_a_slot_when_one_of_its_jobs_ends(queue, fresh, shape):
    ids = queue.enqueue_many(keyed("a", 4))
    queue.set_limit("api", key_concurrency=2)
    first = queue.claim_many("w", 10, queues=SHAPES[shape])
    assert [j.id for j in first] == ids[:2]
    queue.complete(first[0].id, first[0].token)
    assert [j.id for j in queue.claim_many("w", 10, queues=SHAPES[shape])] == [ids[2]]
    queue.fail(first[1].id, first[1].token, "boom", retry_in=3600)  # pending: not running
    assert [j.id for j in queue.claim_many("w", 10, queues=SHAPES[shape])] == [ids[3]]


def test_n_per_key_holds_across_queues_claiming_at_once(queue, open_queue, fresh):
    queue.enqueue_many([job for key in "abcde" for job in keyed(key, 6)])
    queue.set_limit("api", key_concurrency=2)
    claimers = [open_queue() for _ in range(4)]
    start = threading.Barrier(len(claimers))
    got: list = []
    errors: list = []

    def claim(q, name):
        try:
            start.wait()
            for _ in range(5):
                got.extend(q.claim_many(name, 3, queues=None if name == "w0" else ["api"]))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=claim, args=(q, f"w{i}")) for i, q in enumerate(claimers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert Counter(j.key for j in got) == {k: 2 for k in "abcde"}
    assert running_per_key(queue) == {k: 2 for k in "abcde"}


@pytest.mark.parametrize("shape", SHAPES)
def test_ordered_keys_run_one_at_a_time_in_id_order_whatever_priority_and_run_at(
        queue, clock, fresh, shape):
    now = clock.now()
    first = queue.enqueue("k", queue="api", key="a", priority=0, run_at=now - 10)
    second = queue.enqueue("k", queue="api", key="a", priority=9, run_at=now - 100)
    third = queue.enqueue("k", queue="api", key="a", priority=5)
    loose = queue.enqueue("k", queue="api", priority=-5)
    queue.set_limit("api", ordered=True)
    order = []
    while True:
        jobs = queue.claim_many("w", 10, queues=SHAPES[shape])
        if not jobs:
            break
        assert sum(j.key == "a" for j in jobs) <= 1
        order += [j.id for j in jobs]
        for j in jobs:
            queue.complete(j.id, j.token)
    assert [i for i in order if i != loose] == [first, second, third]
    assert loose in order[:2]  # a job without a key is not held back


def test_an_ordered_key_waits_while_a_failed_job_backs_off_and_a_delayed_job_is_due(
        queue, clock, fresh):
    queue.set_limit("api", ordered=True)
    a1, a2 = queue.enqueue_many(keyed("a", 2))
    b1 = queue.enqueue("k", queue="api", key="b", delay=60)
    b2 = queue.enqueue("k", queue="api", key="b")
    job = queue.claim("w", queues=["api"])
    assert job.id == a1
    queue.fail(job.id, job.token, "boom", retry_in=30)
    assert queue.claim_many("w", 10, queues=["api"]) == []  # a1 backs off, b1 is delayed
    assert queue.why(a2).reason == "key_held" and f"earlier job {a1}" in queue.why(a2).message
    clock.advance(31)
    assert [j.id for j in queue.claim_many("w", 10, queues=["api"])] == [a1]
    clock.advance(30)
    retry = queue.claim_many("w", 10, queues=["api"])
    assert [j.id for j in retry] == [b1]  # a1 still runs: a2 waits
    assert b2 not in [j.id for j in retry]


@pytest.mark.parametrize("end", ["succeeded", "dead", "cancelled"])
def test_an_ended_job_unblocks_its_ordered_key(queue, fresh, end):
    queue.set_limit("api", ordered=True)
    a1, a2 = queue.enqueue_many(keyed("a", 2, max_attempts=1))
    if end == "cancelled":
        queue.cancel(a1)
    else:
        job = queue.claim("w", queues=["api"])
        if end == "succeeded":
            queue.complete(job.id, job.token)
        else:
            queue.fail(job.id, job.token, "boom")
    assert queue.get(a1).status == end
    assert queue.claim("w", queues=["api"]).id == a2


def test_a_waiting_job_blocks_its_ordered_key(queue, fresh):
    queue.set_limit("api", ordered=True)
    dependency = queue.enqueue("d", queue="elsewhere")
    waiting = queue.enqueue("k", queue="api", key="a", after=[dependency])
    later = queue.enqueue("k", queue="api", key="a")
    assert queue.get(waiting).status == "waiting"
    assert queue.claim_many("w", 10, queues=["api"]) == []
    job = queue.claim("w", queues=["elsewhere"])
    queue.complete(job.id, job.token)
    assert [j.id for j in queue.claim_many("w", 10, queues=["api"])] == [waiting]
    assert queue.why(later).reason == "key_held"


def test_jobs_without_a_key_and_other_queues_are_not_held_back(queue, fresh):
    queue.set_limit("api", key_concurrency=1)
    queue.enqueue_many(keyed("a", 3) + keyed(None, 3) + keyed("a", 3, queue="mail"))
    claimed = queue.claim_many("w", 20)
    assert Counter((j.queue, j.key) for j in claimed) == {
        ("api", "a"): 1, ("api", None): 3, ("mail", "a"): 3}


def test_a_reaped_lease_frees_its_key_and_the_zombie_is_refused(queue, clock, fresh):
    queue.set_limit("api", key_concurrency=1)
    a1, a2 = queue.enqueue_many(keyed("a", 2))
    zombie = queue.claim("w1", queues=["api"], lease=5)
    assert zombie.id == a1 and queue.claim("w2", queues=["api"]) is None
    clock.advance(6)
    assert queue.reap() == 1
    assert queue.claim("w2", queues=["api"]).id == a2
    with pytest.raises(LeaseLost):
        queue.complete(zombie.id, zombie.token)
    assert running_per_key(queue) == {"a": 1}


def test_a_stale_control_cache_never_overruns_a_key(queue, open_queue):
    """No TTL patch: the claiming queue learns of the key limit only within controls.TTL.
    Until then its statement has no key filter, and gives the queue no room at all."""
    queue.enqueue_many(keyed("a", 4) + keyed("c", 2) + keyed("b", 1, queue="plain"))
    queue.set_limit("api", concurrency=10)
    assert len(queue.claim_many("w", 1, queues=["api"])) == 1  # the cache: limited, not keyed
    assert len(queue.claim_many("w", 1)) == 1  # and for every queue
    assert running_per_key(queue) == {"a": 2}
    open_queue().set_limit("api", concurrency=10, key_concurrency=1)
    for queues in (["api"], ["api", "plain"], None):
        claimed = queue.claim_many("w", 10, queues=queues)
        assert all(j.queue != "api" for j in claimed)
    other = open_queue()  # a fresh cache sees the key limit: key a is over it, c has room
    assert [j.key for j in other.claim_many("w", 10, queues=["api"])] == ["c"]
    assert running_per_key(queue) == {"a": 2, "c": 1}


def test_a_stale_cache_of_an_uncontrolled_queue_takes_none_of_a_newly_keyed_one(queue,
                                                                              open_queue):
    queue.enqueue_many(keyed("a", 3))
    assert queue.claim_many("w", 1) != []  # the cache: no controls anywhere
    open_queue().set_limit("api", key_concurrency=1)
    assert queue.claim_many("w", 10) == [] and queue.claim_many("w", 10, queues=["api"]) == []
    assert running_per_key(queue) == {"a": 1}


def test_removing_the_limits_returns_the_queue_to_the_plain_claim(queue, fresh):
    queue.enqueue_many(keyed("a", 3))
    queue.set_limit("api", key_concurrency=1, ordered=True)
    assert len(queue.claim_many("w", 10)) == 1
    queue.set_limit("api")
    assert queue.store.queue_controls() == {}
    assert len(queue.claim_many("w", 10)) == 2


def test_set_limit_sets_the_whole_set_and_queues_shows_the_key_limits(queue, fresh):
    queue.set_limit("api", concurrency=3, rate="5/s", key_concurrency=2)
    queue.set_limit("seq", ordered=True)
    queue.enqueue_many(keyed("a", 2) + keyed("b", 1) + keyed(None, 1))
    queue.claim_many("w", 10, queues=["api"])
    qs = queue.queues()
    api = qs["api"]
    assert (api.concurrency, api.rate, api.key_concurrency, api.ordered) == (3, Rate(5, 1.0), 2,
                                                                             False)
    assert (api.running, api.keys_busy, api.limited, api.keyed) == (3, 2, True, True)
    assert (qs["seq"].ordered, qs["seq"].key_concurrency, qs["seq"].limited) == (True, None, True)
    queue.set_limit("api", key_concurrency=1)  # the whole set: concurrency and rate go
    api = queue.queues()["api"]
    assert (api.concurrency, api.rate, api.key_concurrency) == (None, None, 1)


@pytest.mark.parametrize("bad, error", [({"key_concurrency": 0}, ValueError),
                                        ({"key_concurrency": "2"}, TypeError),
                                        ({"ordered": "yes"}, TypeError)])
def test_bad_key_limits_are_refused(queue, bad, error):
    with pytest.raises(error, match="key_concurrency|ordered"):
        queue.set_limit("api", **bad)
    assert queue.store.queue_controls() == {}


def test_why_names_the_jobs_holding_a_key(queue, fresh):
    queue.register_worker("w1", host="h", pid=1, queues=None, concurrency=1, beat_interval=10.0)
    queue.set_limit("api", key_concurrency=2)
    a1, a2, a3 = queue.enqueue_many(keyed("customer:7", 3))
    queue.claim_many("w", 10, queues=["api"])
    why = queue.why(a3)
    assert why.reason == "key_held"
    assert why.message == f"'customer:7' held by jobs {a1}, {a2} (2/2 running)"
    assert why.details["running"] == [a1, a2]
    queue.set_limit("api", ordered=True, key_concurrency=None)
    assert f"earlier job {a1} with the same key" in queue.why(a3).message
    free = queue.enqueue("k", queue="api", key="other")
    assert queue.why(free).reason == "ready"


def test_a_database_from_before_keys_is_migrated_and_its_jobs_have_no_key(database, adapter,
                                                                          clock, fresh):
    from jobq_core import Queue

    adapter.old_schema(database, adapter.last_version_without["key"], statements=(
        "INSERT INTO jobq_jobs(kind, queue, payload, max_attempts, run_at, created_at) "
        "VALUES ('old', 'api', 'null', 3, 0, 0)",))
    with Queue(database, clock=clock) as q:
        [old] = q.list()
        assert (old.kind, old.key) == ("old", None)
        q.set_limit("api", key_concurrency=1)
        q.enqueue_many(keyed("a", 2))
        assert Counter(j.key for j in q.claim_many("w", 10)) == {None: 1, "a": 1}
        assert q.queues()["api"].keys_busy == 1


def test_a_key_travels_with_a_job_enqueued_in_the_applications_transaction(queue, database):
    from stores import AppDB

    with AppDB(database) as app:
        keyed_id = queue.enqueue("k", key="c7", conn=app.conn)
        plain_ids = queue.enqueue_many([("k", 1), {"kind": "k", "key": "c8"}], conn=app.conn)
        app.commit()
    assert [queue.get(i).key for i in (keyed_id, *plain_ids)] == ["c7", None, "c8"]


def test_a_copied_job_keeps_its_key(queue, open_queue):
    queue.enqueue("k", key="c7")
    [copied] = open_queue().copy_in(queue.list(status="pending"))
    assert queue.get(copied).key == "c7"
