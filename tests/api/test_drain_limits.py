"""testing.drain with a fake clock ends only when no pending job is left that time can
free: a full rate window is waited out (the clock moved to its end), as a delay is; a
paused queue is not."""
from __future__ import annotations

from jobq_core import Registry, JobStatus
from jobq_core.testing import drain


def registry() -> Registry:
    r = Registry()

    @r.task("ping")
    def ping(payload):
        return payload

    return r


def test_a_drain_waits_out_a_full_rate_window_with_a_fake_clock(queue, clock):
    queue.set_limit("default", rate="1/m")
    ids = [queue.enqueue("ping", i) for i in range(3)]
    start = clock.now()
    ran = drain(queue, registry(), clock=clock)
    assert [r.job_id for r in ran] == ids
    assert all(queue.get(i).status == JobStatus.SUCCEEDED for i in ids)
    assert 120 <= clock.now() - start <= 180  # two windows waited out, no more


def test_a_drain_leaves_a_paused_queues_jobs_pending_and_ends(queue, clock):
    queue.pause("default")
    job_id = queue.enqueue("ping")
    assert drain(queue, registry(), clock=clock) == []
    assert queue.get(job_id).status == JobStatus.PENDING
