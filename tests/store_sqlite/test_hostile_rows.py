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
