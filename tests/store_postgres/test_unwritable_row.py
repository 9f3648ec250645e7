"""One row the reaper cannot write (here a kind of 9,000 random characters, written past
enqueue's check, whose dead-marking overflows an index row) is set aside with a warning
naming it; every other expired job is still taken back, in this pass and the next."""
from __future__ import annotations

import secrets

import psycopg
from jobq_core import Queue
from jobq_core.testing import FakeClock


def test_the_reaper_takes_back_every_other_job_and_names_the_row_it_cannot_write(
        pg_url, jobq_log):
    clock = FakeClock()
    with Queue(pg_url, clock=clock) as q:
        bad = q.enqueue("k", max_attempts=1)
        good = q.enqueue_many([{"kind": "k", "max_attempts": 1} for _ in range(3)])
        with psycopg.connect(pg_url, autocommit=True) as conn:  # incompressible: no TOAST
            conn.execute("UPDATE jobq_jobs SET kind = %s WHERE id = %s",
                         (secrets.token_hex(4500), bad))
        assert len(q.claim_many("w", 4, lease=5)) == 4
        clock.advance(10)

        assert q.reap() == 3
        assert {q.get(i).status for i in good} == {"dead"}
        assert q.get(bad).status == "running"  # set aside, not lost
        warnings = [r.getMessage() for r in jobq_log.records]
        assert any(f"job {bad}" in m and "index row" in m for m in warnings), warnings

        late = q.enqueue("k", max_attempts=1)  # a later pass is not blocked either
        q.claim("w", lease=5)
        clock.advance(10)
        assert q.reap() == 1
        assert q.get(late).status == "dead"
