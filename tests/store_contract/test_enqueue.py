"""Enqueueing: what is stored, what is refused (nothing written), unique keys, ids."""
import math
from datetime import datetime, timedelta, timezone

import pytest

from jobq_core import PayloadTooLarge


def test_enqueue_returns_increasing_ids_and_stores_the_payload(queue, clock):
    a = queue.enqueue("email", {"to": "ada@example.com", "n": [1, 2.5, None, True]})
    b = queue.enqueue("email")
    assert b > a
    job = queue.get(a)
    assert job.kind == "email" and job.queue == "default" and job.priority == 0
    assert job.payload == {"to": "ada@example.com", "n": [1, 2.5, None, True]}
    assert job.status == "pending" and job.attempts == 0
    assert job.run_at == clock.now() and job.created_at == clock.now()
    assert queue.get(b).payload is None


def test_unicode_and_nul_survive_the_round_trip(queue):
    text = "żółw \u202e 漢字 \x00 end"
    assert queue.get(queue.enqueue("k", {"t": text})).payload == {"t": text}


@pytest.mark.parametrize("payload, error", [
    ({"f": object()}, TypeError),
    ({1, 2}, TypeError),
    (math.nan, ValueError),
    ({"x": math.inf}, ValueError),
    ({"bytes": b"\xff"}, TypeError),
    ("lone surrogate \udcff from undecodable bytes", ValueError),
])
def test_a_payload_that_is_not_json_raises_before_anything_is_written(queue, payload, error):
    with pytest.raises(error):
        queue.enqueue("k", payload)
    assert queue.list() == []


def test_a_payload_that_contains_itself_raises_a_value_error_in_one_and_in_many(queue):
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="payload is not JSON-serializable: it refers to itself"):
        queue.enqueue("k", {"a": loop})
    with pytest.raises(ValueError, match="refers to itself"):
        queue.enqueue_many([("ok", 1), ("k", loop)])
    assert queue.list() == []


def test_a_payload_over_the_limit_is_refused_with_the_limit_in_the_message(open_queue):
    q = open_queue(max_payload_bytes=100)
    q.enqueue("k", "x" * 98)  # 100 bytes as JSON, with the quotes
    with pytest.raises(PayloadTooLarge, match="101 bytes.*limit is 100 bytes"):
        q.enqueue("k", "x" * 99)
    with pytest.raises(PayloadTooLarge):  # counted in UTF-8 bytes, not characters
        q.enqueue("k", "é" * 50)
    assert len(q.list()) == 1


def test_a_ten_megabyte_payload_is_accepted_by_default(queue):
    big = "x" * 10_000_000
    assert queue.get(queue.enqueue("k", big)).payload == big


@pytest.mark.parametrize("kwargs, error", [
    ({"kind": ""}, ValueError),
    ({"kind": 5}, ValueError),
    ({"queue": ""}, ValueError),
    ({"priority": 1.5}, TypeError),
    ({"priority": True}, TypeError),
    ({"delay": -1}, ValueError),
    ({"delay": math.nan}, TypeError),
    ({"max_attempts": 0}, ValueError),
    ({"unique_key": ""}, ValueError),
    ({"run_at": datetime(2030, 1, 1)}, ValueError),
    ({"run_at": 10.0, "delay": 5}, ValueError),
])
def test_bad_arguments_are_refused_and_nothing_is_written(queue, kwargs, error):
    args = {"kind": "k", **kwargs}
    kind = args.pop("kind")
    with pytest.raises(error):
        queue.enqueue(kind, None, **args)
    assert queue.list() == []


def test_delay_and_run_at_set_when_the_job_becomes_ready(queue, clock):
    a = queue.enqueue("k", delay=60)
    when = datetime.fromtimestamp(clock.now(), timezone.utc) + timedelta(hours=1)
    b = queue.enqueue("k", run_at=when)
    c = queue.enqueue("k", run_at=clock.now() + 5)
    assert queue.get(a).run_at == clock.now() + 60
    assert queue.get(b).run_at == pytest.approx(clock.now() + 3600)
    assert queue.get(c).run_at == clock.now() + 5


def test_enqueue_many_accepts_tuples_and_dicts_and_keeps_their_order(queue):
    ids = queue.enqueue_many([
        ("a", 1),
        {"kind": "b", "payload": 2, "queue": "mail", "priority": 3, "max_attempts": 2},
        ("c",),
    ])
    assert ids == sorted(ids) and len(set(ids)) == 3
    jobs = [queue.get(i) for i in ids]
    assert [(j.kind, j.payload) for j in jobs] == [("a", 1), ("b", 2), ("c", None)]
    assert (jobs[1].queue, jobs[1].priority, jobs[1].max_attempts) == ("mail", 3, 2)
    assert queue.enqueue_many([]) == []


@pytest.mark.parametrize("n", [2, 63, 64, 65, 130, 257])
def test_a_batch_of_any_size_gets_increasing_ids_each_with_its_own_job(queue, n):
    # a store may write a batch in several statements (SQLite: up to 64 rows each); every
    # job keeps its own fields and the ids follow the batch's order. Every tenth payload
    # is too big to keep inline, every seventh job has a key
    items = [{"kind": f"k{i}", "payload": {"i": i, "pad": "é" * (400 if i % 10 == 3 else 0)},
              "priority": i % 3, **({"key": f"key{i}"} if i % 7 == 5 else {})}
             for i in range(n)]
    before = queue.enqueue("first")
    ids = queue.enqueue_many(items)
    assert ids == sorted(set(ids)) and len(ids) == n and ids[0] > before
    for job_id, item in zip(ids, items):
        job = queue.get(job_id)
        assert (job.kind, job.payload, job.priority, job.key) == (
            item["kind"], item["payload"], item["priority"], item.get("key"))


def test_enqueue_many_writes_nothing_when_one_item_is_bad(queue):
    with pytest.raises(TypeError):
        queue.enqueue_many([("a", 1), ("b", object())])
    with pytest.raises(TypeError, match=r"unknown key\(s\) colour; known: delay, key, kind"):
        queue.enqueue_many([{"kind": "a", "colour": "red"}])
    with pytest.raises(TypeError):
        queue.enqueue_many(["just a string"])
    assert queue.list() == []


def test_a_unique_key_returns_the_live_job_instead_of_adding_another(queue):
    first = queue.enqueue("sync", {"user": 1}, unique_key="sync:1")
    assert queue.enqueue("sync", {"user": 1}, unique_key="sync:1") == first
    other = queue.enqueue("sync", {"user": 2}, unique_key="sync:2")
    assert other != first
    job = queue.claim("w")
    assert job.id == first
    assert queue.enqueue("sync", unique_key="sync:1") == first  # running still counts
    queue.complete(job.id, job.token)
    again = queue.enqueue("sync", unique_key="sync:1")  # finished: the key is free again
    assert again not in (first, other)


def test_unique_keys_inside_one_batch_collapse_to_one_job(queue):
    ids = queue.enqueue_many([
        {"kind": "a", "unique_key": "k"}, ("b", None), {"kind": "a", "unique_key": "k"}, ("c", 1),
    ])
    assert ids[0] == ids[2] and len(set(ids)) == 3
    assert len(queue.list()) == 3


def test_ids_are_never_reused_after_prune(queue, clock):
    ids = queue.enqueue_many([("k", i) for i in range(3)])
    for job in queue.claim_many("w", 3):
        queue.complete(job.id, job.token)
    clock.advance(10)
    assert queue.prune(older_than=1) == 2  # the newest job stays, holding the highest id
    assert queue.enqueue("k") > ids[-1]


def test_a_big_payload_is_read_back_everywhere_and_pruned_with_its_job(queue, clock):
    big = {"body": "é" * 400}  # 800+ bytes of UTF-8: more than a store may keep inline
    small = {"body": "x"}
    big_id, small_id = queue.enqueue_many([("k", big), ("k", small)])
    assert queue.get(big_id).payload == big
    assert [j.payload for j in queue.list(status="pending")] == [big, small]
    assert [j.payload for j in queue.list(payloads=False)] == [None, None]
    job = queue.claim("w")
    assert job.id == big_id and job.payload == big
    queue.complete(job.id, job.token, big)
    assert queue.get(big_id).payload == big and queue.get(big_id).result == big
    queue.enqueue("k")  # the newest job is never pruned
    clock.advance(10)
    assert queue.prune(older_than=1) == 1
    assert queue.get(big_id) is None and queue.get(small_id).payload == small
