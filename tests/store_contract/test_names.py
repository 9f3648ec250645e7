"""Names a job is filed under (kind, queue, unique key) are checked before anything is
written, on every store: at most 255 bytes of UTF-8, no NUL, no lone surrogate. A value
the database would refuse, or an index could not hold, never reaches a write."""
from __future__ import annotations

import pytest

from jobq_core.api.new_jobs import prepare

LIMIT = 255

BAD_NAMES = [
    pytest.param("x" * (LIMIT + 1), "at most 255 bytes", id="256-ascii"),
    pytest.param("€" * 86, "at most 255 bytes", id="258-bytes-in-86-chars"),
    pytest.param("file-\udcff", "lone surrogate", id="surrogate"),
    pytest.param("a\x00b", "NUL", id="nul"),
]


@pytest.mark.parametrize("field", ["kind", "queue", "unique_key"])
@pytest.mark.parametrize("value, message", BAD_NAMES)
def test_a_name_the_store_cannot_hold_is_refused_naming_the_field_and_nothing_is_written(
        queue, field, value, message):
    item = {"kind": "k", field: value}
    with pytest.raises(ValueError, match=message) as raised:
        queue.enqueue(**item)
    assert str(raised.value).startswith(f"{field} ")
    with pytest.raises(ValueError, match=f"^{field} .*{message}"):
        queue.enqueue_many([{"kind": "k"}, item])
    with pytest.raises(ValueError, match=f"^{field} .*{message}"):
        prepare([{"kind": "k"}, item])
    assert queue.count() == 0


@pytest.mark.parametrize("value", ["x" * LIMIT, "€" * 85, "日本語のキュー"],
                         ids=["255-ascii", "255-bytes", "japanese"])
def test_a_name_of_up_to_255_bytes_is_stored_and_read_back_whole(queue, value):
    job_id = queue.enqueue(value, queue=value, unique_key=value)
    job = queue.get(job_id)
    assert (job.kind, job.queue, job.unique_key) == (value, value, value)
    claimed = queue.claim("w", queues=[value])
    queue.fail(claimed.id, claimed.token, "boom")
    assert queue.get(job_id).status in ("pending", "dead")


# What an array literal would read as syntax: a server store passes short lists of names and
# results to its statements as literals, so each must come back as the text it was
ARRAY_SYNTAX = ["a,b", "{x}", '"q"', "back\\slash", "NULL", " spaced ", "\\\"{,}", "日本"]


def test_names_and_results_made_of_array_syntax_come_back_as_written(queue):
    ids = {name: queue.enqueue("k", name, queue=name) for name in ARRAY_SYNTAX}
    queue.set_limit(ARRAY_SYNTAX[0], concurrency=5)  # its claims lock the queue's row
    jobs = queue.claim_many("w", len(ARRAY_SYNTAX), queues=ARRAY_SYNTAX)
    assert sorted(j.id for j in jobs) == sorted(ids.values())
    half = len(jobs) // 2
    # results as strings and inside objects, through both ways a batch completes
    accepted, more = queue.complete_and_claim(
        [(j.id, j.token, j.payload) for j in jobs[:half]], "w", 0)
    assert accepted == [True] * half and more == []
    accepted, more = queue.complete_and_claim(
        [(j.id, j.token, {"name": j.payload}) for j in jobs[half:]], "w", 1,
        queues=ARRAY_SYNTAX)
    assert accepted == [True] * (len(jobs) - half) and more == []
    for j in jobs[:half]:
        assert queue.get(j.id).result == j.payload
    for j in jobs[half:]:
        assert queue.get(j.id).result == {"name": j.payload}
    assert {queue.get(i).queue for i in ids.values()} == set(ARRAY_SYNTAX)
