"""Rows written to the database by something other than jobq must not break reads."""
import sqlite3

from jobq_core import RawJSON


def _tamper(db_path, sql, *params):
    conn = sqlite3.connect(db_path)
    conn.execute(sql, params)
    conn.commit()
    conn.close()


def test_a_payload_that_is_not_json_is_read_back_as_raw_text(queue, db_path):
    job_id = queue.enqueue("k", {"ok": True})
    _tamper(db_path, "UPDATE jobq_jobs SET payload='{not json' WHERE id=?", job_id)
    job = queue.claim("w")
    assert isinstance(job.payload, RawJSON) and job.payload == "{not json"
    assert queue.get(job_id).payload == "{not json"


def test_text_that_is_not_utf8_is_read_with_replacement_characters(queue, db_path):
    job_id = queue.enqueue("k")
    _tamper(db_path, "UPDATE jobq_jobs SET kind=CAST(x'6bff0041' AS TEXT), "
            "error=CAST(x'c328' AS TEXT) WHERE id=?", job_id)  # 'k\xff\0A', '\xc3('
    job = queue.get(job_id)
    assert job.kind.startswith("k\ufffd") and "\ufffd" in job.error
    assert [j.id for j in queue.list()] == [job_id]
    assert queue.claim("w").id == job_id


def test_a_running_row_with_a_text_max_attempts_is_set_aside_by_the_reaper(queue, db_path,
                                                                           clock):
    bad, good = queue.enqueue("k"), queue.enqueue("k")
    queue.claim_many("w", 2, lease=5)
    _tamper(db_path, "UPDATE jobq_jobs SET max_attempts='three' WHERE id=?", bad)
    clock.advance(10)
    assert queue.reap() == 2  # the good job back to pending, the bad one set aside as dead
    assert queue.get(good).status == "pending"
    job = queue.get(bad)
    assert job.status == "dead" and job.max_attempts == "three"
    assert job.error == ("jobq cannot run this job: column max_attempts holds 'three', not "
                         "an integer (written by another program?)")


def test_a_claim_sets_aside_rows_it_cannot_order_and_returns_the_others(queue, db_path):
    ids = [queue.enqueue("k", priority=p) for p in (1, 2, 3)]
    _tamper(db_path, "UPDATE jobq_jobs SET priority='high' WHERE id=?", ids[1])
    jobs = queue.claim_many("w", 3)
    assert [j.id for j in jobs] == [ids[2], ids[0]]
    assert queue.get(ids[1]).status == "dead"
    assert "column priority holds 'high', not an integer" in queue.get(ids[1]).error
    one = queue.enqueue("k")
    _tamper(db_path, "UPDATE jobq_jobs SET max_attempts=2.5 WHERE id=?", one)
    assert queue.claim("w") is None and queue.get(one).status == "dead"


def test_running_jobs_with_leases_jobq_never_grants_are_taken_back(queue, db_path, clock):
    ids = [queue.enqueue("k") for _ in range(3)]
    queue.claim_many("w", 3, lease=30)
    for job_id, lease in zip(ids, ("NULL", "'soon'", str(clock.now() + 10**9))):
        _tamper(db_path, f"UPDATE jobq_jobs SET lease_until={lease} WHERE id=?", job_id)
    assert queue.reap() == 3
    for job_id in ids:
        job = queue.get(job_id)
        assert job.status == "pending" and job.attempts == 1
        assert "a lease jobq never grants" in queue.attempts(job_id)[-1].error
