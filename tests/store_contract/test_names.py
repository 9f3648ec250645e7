"""Names a job is filed under (kind, queue, unique key) are checked before anything is
written, on every store: at most 255 bytes of UTF-8, no NUL, no lone surrogate. A value
the database would refuse, or an index could not hold, never reaches a write."""
from __future__ import annotations

import pytest

from jobq_core.new_jobs import prepare

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
