"""What operators do to jobs, written once for every store: retry, retry dead, cancel,
prune."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ...errors import InvalidState, JobNotFound
from ...types import JobStatus, Outcome
from .. import listing
from ..backend import KeyTaken
from ..base import FINISHED_STATUSES, TAKEN_BACK, TERMINATED, ListFilter
from ..dbapi import C
from ._base import Operations

PRUNE_BATCH = 500
"""Jobs deleted per transaction by a prune (with their attempts, edges and payloads): each
batch holds SQLite's write lock, or PostgreSQL's row locks, for milliseconds only."""


def dead(where: ListFilter) -> ListFilter:
    """``where`` narrowed to dead jobs, its prefixes and search words kept."""
    return replace(where, status=JobStatus.DEAD)


class Admin(Operations[C]):
    def job_retry(self, job_id: int, now: float, force: bool = False) -> None:
        def op(c: C, _again: bool) -> None:
            with self.backend.transaction(c):
                row = c.execute(self.statements.JOB_STATE, (job_id,)).fetchone()
                if row is None:
                    raise JobNotFound(job_id)
                status, queue, attempts, worker, token, started = row
                if force and status == JobStatus.RUNNING:
                    c.execute(self.statements.RECORD_ATTEMPT, (job_id, attempts, worker, token, started,
                                                      now, str(Outcome.LEASE_LOST), TAKEN_BACK))
                elif status not in (JobStatus.DEAD, JobStatus.CANCELLED):
                    raise InvalidState(f"job {job_id} is {status}; only dead or cancelled jobs "
                                       "can be retried (a running one with force)")
                try:
                    with self.backend.savepoint(c):
                        c.execute(self.statements.REVIVE_ONE, (now, job_id)).fetchall()
                except KeyTaken:
                    raise InvalidState(f"job {job_id}: another pending or running job holds "
                                       "its unique key") from None
                unmet = c.execute(self.statements.UNMET, (job_id,)).fetchone()
                assert unmet is not None, "UNMET is a count: it always has its row"
                if unmet[0]:
                    c.execute(self.statements.TO_WAITING, (job_id,))  # its dependencies again first
                elif self.backend.notifies:
                    self.backend.notify(c, [queue])

        self.backend.run(op)

    def job_retry_dead(self, where: ListFilter, now: float) -> int:
        conds, params, _ = listing.list_conditions(self.dialect.MATCHING, dead(where), now)
        bulk = self.dialect.native(listing.revive_matching(conds, keyed=False))
        keyed = self.dialect.native(listing.revive_matching(conds, keyed=True))

        def op(c: C, _again: bool) -> int:
            with self.backend.transaction(c):
                queues = [r[0] for r in c.execute(bulk, [now, *params]).fetchall()]
                # A job whose unique key is live elsewhere (or in an earlier job of this
                # retry) stays dead: one at a time, each behind a savepoint.
                for (job_id,) in c.execute(keyed, params).fetchall():
                    try:
                        with self.backend.savepoint(c):
                            queues += [r[0] for r in c.execute(
                                self.statements.REVIVE_ONE, (now, job_id)).fetchall()]
                    except KeyTaken:
                        pass
                if self.backend.notifies:
                    self.backend.notify(c, set(queues))
                return len(queues)

        return self.backend.run(op)

    def job_cancel(self, job_id: int, now: float, terminate: bool = False) -> str:
        def op(c: C, _again: bool) -> str:
            with self.backend.transaction(c):
                row = c.execute(self.statements.JOB_STATE, (job_id,)).fetchone()
                if row is None:
                    raise JobNotFound(job_id)
                status, _queue, attempts, worker, token, started = row
                if status == JobStatus.RUNNING and not terminate:
                    c.execute(self.statements.REQUEST_CANCEL, (job_id,))
                    return JobStatus.RUNNING
                if status == JobStatus.RUNNING:  # its run's token goes: fenced out
                    c.execute(self.statements.LEAVE_RUNNING, (
                        str(JobStatus.CANCELLED), now, attempts, TERMINATED, now, job_id, token))
                    c.execute(self.statements.RECORD_ATTEMPT, (
                        job_id, attempts, worker, token, started, now, str(Outcome.CANCELLED),
                        TERMINATED))
                elif status in (JobStatus.PENDING, JobStatus.WAITING):
                    c.execute(self.statements.CANCEL_PENDING, (now, job_id))
                else:
                    raise InvalidState(f"job {job_id} is already {status}")
                self.dialect.ended(c, [job_id])
                self._settle(c, job_id, JobStatus.CANCELLED, now)
                return JobStatus.CANCELLED

        return self.backend.run(op)

    def job_prune(self, finished_before: float, statuses: Sequence[str] = FINISHED_STATUSES,
                  dry_run: bool = False) -> dict[str, int]:
        names = self.dialect.list_param([str(s) for s in statuses])
        if dry_run:
            counts: list[tuple[str, int]] = self.backend.run(lambda c, _again: c.execute(
                self.statements.PRUNE_COUNT, (names, finished_before)).fetchall())
            return dict(counts)

        pruned: dict[str, int] = {}
        while True:
            batch = self.job_prune_batch(finished_before, statuses, PRUNE_BATCH)
            for status, n in batch.items():
                pruned[status] = pruned.get(status, 0) + n
            if sum(batch.values()) < PRUNE_BATCH:
                return pruned

    def job_prune_batch(self, finished_before: float, statuses: Sequence[str],
                        limit: int) -> dict[str, int]:
        names = self.dialect.list_param([str(s) for s in statuses])

        def op(c: C, _again: bool) -> list[tuple[int, str]]:
            with self.backend.transaction(c):
                rows = c.execute(self.statements.PRUNE_PICK, (names, finished_before, limit)).fetchall()
                if rows:
                    ids = self.dialect.list_param([r[0] for r in rows])
                    for delete in self.dialect.prune_deletes():
                        c.execute(delete, (ids,))
            return rows

        pruned: dict[str, int] = {}
        for _, status in self.backend.run(op):
            pruned[status] = pruned.get(status, 0) + 1
        return pruned
