"""Big payloads live in their own table, so the hot job row stays small."""
import sqlite3


def test_a_big_payload_is_kept_out_of_the_job_row_and_pruned_with_its_job(queue, db_path, clock):
    big = {"body": "é" * 400}  # 800+ bytes of UTF-8: over the inline limit
    big_id, small_id = queue.enqueue_many([("k", big), ("k", {"body": "x"})])
    raw = sqlite3.connect(db_path)
    rows = raw.execute("SELECT id, payload FROM jobq_jobs ORDER BY id").fetchall()
    assert rows == [(big_id, None), (small_id, '{"body":"x"}')]
    assert raw.execute("SELECT job_id FROM jobq_payloads").fetchall() == [(big_id,)]
    job = queue.claim("w")
    assert job.id == big_id and job.payload == big
    queue.complete(job.id, job.token)
    # claims and completions rewrite the job row, never the payload
    assert raw.execute("SELECT payload FROM jobq_jobs WHERE id=?", (big_id,)).fetchone() == (None,)
    queue.enqueue("k")  # the newest job is never pruned
    clock.advance(10)
    assert queue.prune(older_than=1) == 1
    assert raw.execute("SELECT count(*) FROM jobq_payloads").fetchone() == (0,)
    raw.close()
