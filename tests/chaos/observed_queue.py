"""A Queue that records what the database accepted into the history log.

It only observes: every call goes to the real Queue first, and the event is written after
the call returned, so the log never claims more than the database did. Fault hooks (from
the environment) kill this process at precise points, with a real SIGKILL.
"""
from __future__ import annotations

import os
import signal

from jobq_core import LeaseLost, Queue

from history import HistoryWriter


class ObservedQueue(Queue):
    def __init__(self, path, history: HistoryWriter, **kwargs):
        super().__init__(path, **kwargs)
        self.history = history
        # Die after the handler returned but before its completion is committed, for
        # jobs whose id is in this set (scenario: at-least-once, not exactly-once).
        self.die_before_commit = {
            int(x) for x in os.environ.get("CHAOS_DIE_BEFORE_COMMIT", "").split(",") if x}

    def claim_many(self, worker_id, limit, **kwargs):
        jobs = super().claim_many(worker_id, limit, **kwargs)
        self._log_claims(jobs, worker_id)
        return jobs

    def complete_many(self, items):
        items = list(items)
        self._maybe_die(items)
        results = super().complete_many(items)
        self._log_completions(items, results)
        return results

    def _maybe_die(self, items) -> None:
        if any(job_id in self.die_before_commit for job_id, _, _ in items):
            os.kill(os.getpid(), signal.SIGKILL)

    def _log_claims(self, jobs, worker_id) -> None:
        for job in jobs:
            self.history.write("claimed", job=job.id, token=job.token, attempt=job.attempts,
                               lease=job.lease_until - job.started_at, worker=worker_id)

    def _log_completions(self, items, results) -> None:
        for (job_id, token, _), ok in zip(items, results):
            self.history.write("accepted" if ok else "rejected", job=job_id, token=token)

    def complete_and_claim(self, items, worker_id, limit, **kwargs):
        items = list(items)
        self._maybe_die(items)
        results, jobs = super().complete_and_claim(items, worker_id, limit, **kwargs)
        self._log_completions(items, results)
        self._log_claims(jobs, worker_id)
        return results, jobs

    def fail(self, job_id, token, error, **kwargs):
        return self._record_failure(super().fail, job_id, token, error, **kwargs)

    def give_up(self, job_id, token, error):
        return self._record_failure(super().give_up, job_id, token, error)

    def release(self, job_id, token):
        super().release(job_id, token)
        self.history.write("released", job=job_id, token=token)

    def _record_failure(self, call, job_id, token, error, **kwargs):
        try:
            job = call(job_id, token, error, **kwargs)
        except LeaseLost:
            self.history.write("rejected", job=job_id, token=token)
            raise
        self.history.write("failed", job=job_id, token=token, status=str(job.status))
        return job
