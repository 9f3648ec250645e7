"""The generated row readers (store/rows.py) build the same Job as Job's own __init__."""
from __future__ import annotations

import dataclasses

from jobq_core import Job, JobStatus, RawJSON
from jobq_core.store.rows import CLAIM_FIELDS, SET_BY_CLAIM, claimed_job, job_from_row


def _plain(values: dict) -> Job:
    return Job(**values)


def test_job_from_row_sets_every_field_as_jobs_init_would():
    values = {f.name: None for f in dataclasses.fields(Job)}
    values.update(id=3, kind="k", queue="q", payload='{"a": [1, 2]}', priority=5,
                  status="dead", attempts=2, max_attempts=7, run_at=1.5, result="not json",
                  cancel_requested=1, error="boom")
    job = job_from_row(tuple(values[name] for name in Job.__slots__))
    assert job == _plain({**values, "payload": {"a": [1, 2]}, "status": JobStatus.DEAD,
                          "result": RawJSON("not json"), "cancel_requested": True})
    assert type(job.status) is JobStatus and type(job.result) is RawJSON


def test_a_status_jobq_does_not_know_is_kept_as_its_text():
    values = {name: None for name in Job.__slots__} | {"status": "weird", "cancel_requested": 0}
    assert job_from_row(tuple(values[name] for name in Job.__slots__)).status == "weird"


def test_claimed_job_takes_what_the_claim_set_from_its_arguments():
    assert set(CLAIM_FIELDS) | set(SET_BY_CLAIM) == set(Job.__slots__)
    row = {name: None for name in CLAIM_FIELDS} | {"id": 9, "payload": "1", "cancel_requested": 0}
    job = claimed_job(tuple(row[name] for name in CLAIM_FIELDS), 30.0, "w1", 10.0)
    assert (job.status, job.lease_until, job.worker, job.started_at, job.heartbeat_at,
            job.payload, job.cancel_requested) == (JobStatus.RUNNING, 30.0, "w1", 10.0, 10.0,
                                                   1, False)


def test_a_read_job_is_a_frozen_job_like_any_other():
    """The readers fill an unfrozen twin of Job and then make it a Job (``__class__``): the
    result must be indistinguishable from one Job(...) made."""
    import copy
    import pickle

    import pytest

    values = {name: None for name in Job.__slots__} | {"id": 4, "kind": "k", "payload": "1",
                                                      "status": "pending", "cancel_requested": 0}
    job = job_from_row(tuple(values[name] for name in Job.__slots__))
    assert type(job) is Job and isinstance(job, Job)
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.kind = "other"
    assert pickle.loads(pickle.dumps(job)) == job == copy.copy(job)
    assert dataclasses.replace(job, kind="x").kind == "x" and job.kind == "k"
