"""Producing and running jobs, written once for every store: enqueue, claim, heartbeat,
complete, fail, release, progress, and the reaper's pass.

Every write to a running job carries the fence (``sql.FENCE``: its id, ``running`` and the
claim's token) and checks what it changed; a mismatch is reported (False / None / lost),
never written over.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

from ...common.checks import MAX_LEASE
from ...common.textsafe import clean
from ...types import ExtendResult, Job, JobStatus, Outcome
from .. import sql
from ...types import Deps, NewJob
from ..base import (
    DEFAULT_MAX_LOST_ATTEMPTS, Completion, RetryDelay, lease_expired, poisoned,
)
from ..dbapi import C, Row, one
from ..rows import claimed_job, job_from_row, unreadable
from ..controls import Controls
from ..attempts import after_attempt
from ._base import Operations
from .writes import complete, insert_jobs

log = logging.getLogger("jobq.store")

BATCH = 1000  # rows per transaction for maintenance work, so writers never wait long


def _claim_order(job: Job) -> tuple[int, float, int]:
    return -job.priority, job.run_at, job.id


class Running(Operations[C]):
    # -- producing ----------------------------------------------------------------------

    def job_insert_many(self, jobs: Sequence[NewJob], now: float,
                        deps: Sequence[Deps | None] | None = None) -> list[int]:
        if deps is not None and any(deps):
            def insert_dependent(c: C, again: bool) -> list[int]:
                self._refuse_if_maybe_committed(again)
                with self.backend.transaction(c):
                    return self._insert_with_deps(c, jobs, deps, now)

            return self.backend.run(insert_dependent)
        for job in jobs:  # (a loop: any() of a generator costs 3 % of an enqueue)
            if job.unique_key is not None:
                break
        else:  # one statement where the dialect can
            return self.backend.run(lambda c, again: self._insert_plain(c, jobs, now, again))

        def op(c: C, again: bool) -> list[int]:
            self._refuse_if_maybe_committed(again)
            with self.backend.transaction(c):
                return self._insert(c, jobs, now)

        return self.backend.run(op)

    def _insert_plain(self, c: C, jobs: Sequence[NewJob], now: float, again: bool) -> list[int]:
        self._refuse_if_maybe_committed(again)
        notify = self.backend.due({j.queue for j in jobs}) if self.backend.notifies else []
        return self.dialect.insert_plain(c, jobs, now, notify)

    def _insert(self, c: C, jobs: Sequence[NewJob], now: float) -> list[int]:
        """Inside a transaction: ``writes.insert_jobs``, then the wake of their queues."""
        ids = insert_jobs(c, self.dialect, jobs, now)
        self._released(c, {j.queue for j in jobs})
        return ids

    # -- claiming -----------------------------------------------------------------------

    def job_claim(self, worker: str, queues: Sequence[str] | None, now: float,
                  lease_until: float, limit: int,
                  attempt_limits: Mapping[str, int] | None = None) -> list[Job]:
        return self.backend.run(lambda c, _again: self._claim(
            c, worker, queues, now, lease_until, limit, attempt_limits))

    def _claim(self, c: C, worker: str, queues: Sequence[str] | None, now: float,
               lease_until: float, limit: int,
               attempt_limits: Mapping[str, int] | None = None) -> list[Job]:
        queues, controls = self._claim_inputs(c, queues)
        rows, plain = self.dialect.claim(c, worker, queues, now, lease_until, limit, attempt_limits,
                                   controls)
        return self._claimed(c, rows, plain, worker, now, lease_until, limit)

    def _claim_inputs(self, c: C, queues: Sequence[str] | None) -> tuple[list[str], Controls]:
        """A claim's queues without repeats, and the queue controls it must respect."""
        queues = list(dict.fromkeys(queues)) if queues else []
        return queues, self._controls.get(lambda: c.execute(self.statements.CONTROL_STATE).fetchall())

    def _claimed(self, c: C, rows: list[Row], plain: bool, worker: str, now: float,
                 lease_until: float, limit: int) -> list[Job]:
        """The jobs of a claim's rows, in claim order."""
        jobs = [claimed_job(r, lease_until, worker, now) for r in rows]
        if plain:
            self._controls.claimed(limit, len(jobs))
        if len(jobs) > 1:
            try:
                jobs.sort(key=_claim_order)  # RETURNING order is unspecified
            except TypeError:  # a column another program wrote: set those jobs aside
                jobs = self._readable(c, jobs, now)
                jobs.sort(key=_claim_order)
        elif jobs and not (type(jobs[0].max_attempts) is type(jobs[0].priority) is int):
            jobs = self._readable(c, jobs, now)
        return jobs

    def _readable(self, c: C, jobs: list[Job], now: float) -> list[Job]:
        """The claimed jobs jobq can run; the others go dead, each with an error naming the
        column it cannot read (the claim's token fences the move)."""
        ok = []
        for job in jobs:
            bad = unreadable(priority=job.priority, run_at=job.run_at, attempts=job.attempts,
                             max_attempts=job.max_attempts)
            if bad:
                assert job.token is not None  # a claimed job holds its claim's token
                with self.backend.transaction(c):
                    self._quarantine(c, job.id, job.token, bad, now)
            else:
                ok.append(job)
        return ok

    def _quarantine(self, c: C, job_id: int, token: int, bad: str, now: float) -> None:
        """Move a running job jobq cannot read to dead, saying why; the row keeps its values."""
        error = f"jobq cannot run this job: {bad} (written by another program?)"
        c.execute(self.statements.QUARANTINE, (error, now, job_id, token))
        self._settle(c, job_id, JobStatus.DEAD, now)
        log.warning("job %s set aside as dead: %s", job_id, bad)

    def job_next_run_at(self, queues: Sequence[str] | None, after: float) -> float | None:
        queues = list(dict.fromkeys(queues)) if queues else []
        query = self.dialect.native(sql.next_run_at(len(queues)))
        params = sql.next_run_at_params(queues, after)
        found = self.backend.run(lambda c, _again: one(c.execute(query, params))[0])  # min(t)
        # a run_at another program wrote as text sorts after every number: not a time
        return float(found) if isinstance(found, (int, float)) else None

    # -- a running job --------------------------------------------------------------------

    def job_extend_many(self, leases: Iterable[tuple[int, int]], now: float,
                        lease_until: float) -> ExtendResult:
        leases = list(leases)
        if not leases:
            return ExtendResult(frozenset(), frozenset())
        if len(leases) == 1:
            job_id, token = leases[0]
            row = self.backend.run(lambda c, _again: c.execute(
                self.statements.EXTEND, (lease_until, now, job_id, token)).fetchone())
            rows = [] if row is None else [row]
        else:
            rows = self.backend.run(lambda c, _again: self.dialect.extend_many(c, leases, now, lease_until))
        ours: dict[int, object] = dict(rows)  # id -> cancel requested
        return ExtendResult(frozenset({job_id for job_id, _ in leases} - set(ours)),
                            frozenset(job_id for job_id, cancel in ours.items() if cancel))

    def job_check_many(self, leases: Iterable[tuple[int, int]]) -> ExtendResult:
        leases = list(leases)
        if not leases:
            return ExtendResult(frozenset(), frozenset())
        ids = self.dialect.list_param([job_id for job_id, _ in leases])
        rows = self.backend.run(lambda c, _again: c.execute(
            self.statements.LEASES_HELD, (ids,)).fetchall())
        held = {(job_id, token): cancel for job_id, token, cancel in rows}
        return ExtendResult(frozenset(i for i, t in leases if (i, t) not in held),
                            frozenset(i for i, t in leases if held.get((i, t))))

    def job_complete_many(self, completions: Sequence[Completion], now: float) -> list[bool]:
        return self.backend.run(lambda c, again: self._complete(c, completions, now, again))

    def job_complete_and_claim(
        self, completions: Sequence[Completion], now: float, worker: str,
        queues: Sequence[str] | None, lease_until: float, limit: int,
        attempt_limits: Mapping[str, int] | None = None,
    ) -> tuple[list[bool], list[Job]]:
        """Complete, then claim up to ``limit`` jobs, in one transaction: one commit (one
        fsync under SQLite's synchronous=FULL) where a worker would otherwise make two."""
        def op(c: C, again: bool) -> tuple[list[bool], list[Job]]:
            if not completions:  # the claim alone: one statement, no transaction
                return [], self._claim(c, worker, queues, now, lease_until, limit,
                                       attempt_limits) if limit > 0 else []
            if self.dialect.completes_in_claim and not again and limit > 0:
                at_once = self._complete_and_claim_at_once(
                    c, completions, now, worker, queues, lease_until, limit, attempt_limits)
                if at_once is not None:
                    return at_once
            with self.backend.transaction(c):
                accepted = self._complete(c, completions, now, again)
                jobs = self._claim(c, worker, queues, now, lease_until, limit,
                                   attempt_limits) if limit > 0 else []
            return accepted, jobs

        return self.backend.run(op)

    def _complete_and_claim_at_once(
        self, c: C, completions: Sequence[Completion], now: float, worker: str,
        queues: Sequence[str] | None, lease_until: float, limit: int,
        attempt_limits: Mapping[str, int] | None,
    ) -> tuple[list[bool], list[Job]] | None:
        """``job_complete_and_claim`` on a server: the completions and the claim in one
        statement (one round trip where a transaction takes four: BEGIN, complete, claim,
        COMMIT), or None when it cannot be written so: a claim that locks queues' rows
        first, or a batch the statement cannot write whole (a job others wait on, whose
        dependents are settled in the completing transaction; one fenced out), which it
        then leaves unwritten, for ``job_complete_and_claim``'s transaction to write all
        of it or none."""
        queues, controls = self._claim_inputs(c, queues)
        got = self.dialect.complete_and_claim(c, completions, now, worker, queues, lease_until,
                                              limit, attempt_limits, controls)
        if got is None:
            return None
        accepted_ids, rows, plain = got
        assert len(accepted_ids) == len(completions), "a completing claim wrote part of a batch"
        return [True] * len(completions), self._claimed(c, rows, plain, worker, now,
                                                        lease_until, limit)

    def _complete(self, c: C, completions: Sequence[Completion], now: float,
                  again: bool) -> list[bool]:
        """Per completion, whether it was accepted (False: fenced out)."""
        if not completions:
            return []
        if len(completions) == 1 and not again:  # one statement: no BEGIN needed
            return [complete(c, self.statements, completions[0], now, self.backend.transaction,
                             self._released)]
        done = self.dialect.complete_many(c, completions, now, again)
        if any(done.values()):
            with self.backend.transaction(c):  # joins complete_and_claim's transaction
                for job_id, has_dependents in done.items():
                    if has_dependents:
                        self._settle(c, job_id, JobStatus.SUCCEEDED, now)
        accepted = []
        for x in completions:  # the same job twice in one batch: only the first is accepted
            accepted.append(x.job_id in done)
            done.pop(x.job_id, None)
        return accepted

    def job_fail(self, job_id: int, token: int, error: str, now: float,
                 retry_delay: RetryDelay) -> Job | None:
        return self._fail(job_id, token, error, now, retry_delay, give_up=False)

    def job_give_up(self, job_id: int, token: int, error: str, now: float) -> Job | None:
        return self._fail(job_id, token, error, now, lambda _attempt: 0.0, give_up=True)

    def _fail(self, job_id: int, token: int, error: str, now: float, retry_delay: RetryDelay,
              give_up: bool) -> Job | None:
        """One transaction: record the failed attempt and move the job on. ``give_up`` ends
        it dead whatever attempts remain, without touching its stored allowance (a later
        ``retry`` still gets the full one)."""
        def op(c: C, again: bool) -> Job | None:
            with self.backend.transaction(c):
                row = c.execute(self.statements.RUNNING_ROW, (job_id, token)).fetchone()
                if row is None:
                    if again and c.execute(self.statements.ATTEMPT_RECORDED, (job_id, token)).fetchone():
                        return self._get(c, job_id)  # the first try committed
                    return None
                attempts, max_attempts, worker, started_at, cancel, queue, dependents = row
                status, run_at, finished = after_attempt(
                    attempts, attempts if give_up else max_attempts, bool(cancel), now,
                    retry_delay)
                left = c.execute(self.statements.LEAVE_RUNNING_RETURNING, (
                    str(status), run_at, attempts, error, finished, job_id, token)).fetchone()
                assert left is not None  # RUNNING_ROW locked it, under this token, just now
                job = job_from_row(left)
                c.execute(self.statements.RECORD_ATTEMPT, (
                    job_id, attempts, worker, token, started_at, now,
                    str(Outcome.CANCELLED if cancel else Outcome.FAILED), error))
                if status == JobStatus.PENDING:
                    if self.backend.notifies:
                        self.backend.notify(c, [queue])
                else:
                    self.dialect.ended(c, [job_id])
                    if dependents:
                        self._settle(c, job_id, status, now)
                return job

        return self.backend.run(op)

    def job_release(self, job_id: int, token: int, now: float) -> bool:
        """Runnable now with the attempt not counted, or cancelled when cancellation was
        asked for."""
        return self._give_back(job_id, token, now, now, Outcome.RELEASED)

    def job_snooze(self, job_id: int, token: int, now: float, until: float) -> bool:
        """Runnable again at ``until``, the attempt not counted (recorded as snoozed), or
        cancelled when cancellation was asked for."""
        return self._give_back(job_id, token, now, until, Outcome.SNOOZED)

    def _give_back(self, job_id: int, token: int, now: float, run_at: float,
                   outcome: Outcome) -> bool:
        def op(c: C, again: bool) -> bool:
            with self.backend.transaction(c):
                row = c.execute(self.statements.RUNNING_ROW, (job_id, token)).fetchone()
                if row is None:
                    return again and c.execute(
                        self.statements.ATTEMPT_RECORDED, (job_id, token)).fetchone() is not None
                attempts, _max, worker, started_at, cancel, queue, dependents = row
                if cancel:
                    status, when, finished, ended = (JobStatus.CANCELLED, now, now,
                                                     Outcome.CANCELLED)
                else:
                    status, when, finished, ended = JobStatus.PENDING, run_at, None, outcome
                c.execute(self.statements.LEAVE_RUNNING, (str(status), when, attempts - 1, None,
                                                 finished, job_id, token))
                c.execute(self.statements.RECORD_ATTEMPT, (job_id, attempts, worker, token, started_at,
                                                  now, str(ended), None))
                if not cancel and self.backend.notifies:
                    self.backend.notify(c, [queue])
                if cancel:
                    self.dialect.ended(c, [job_id])
                    if dependents:
                        self._settle(c, job_id, JobStatus.CANCELLED, now)
                return True

        return self.backend.run(op)

    def job_progress(self, job_id: int, token: int, fraction: float | None,
                     message: str | None) -> bool:
        return self.backend.run(lambda c, _again: c.execute(
            self.statements.PROGRESS, (fraction, message, job_id, token)).rowcount == 1)

    # -- the reaper ---------------------------------------------------------------------

    def job_reap_expired(self, now: float, retry_delay: RetryDelay,
                         max_lost_attempts: int = DEFAULT_MAX_LOST_ATTEMPTS) -> int:
        """Each row moves behind its own savepoint: a row the database refuses to write
        (a kind written past enqueue's checks whose dead-marking overflows an index row)
        is set aside with a warning naming it, stays running, and is skipped by the later
        passes of this call, so it never blocks the other expired jobs."""
        unwritable: set[int] = set()

        def batch(c: C, _again: bool) -> tuple[int, int]:
            """(expired leases read, jobs moved), in one transaction."""
            moved = 0
            with self.backend.transaction(c):
                rows = c.execute(self.statements.EXPIRED_LEASES, (now, now + MAX_LEASE, BATCH)).fetchall()
                queues: set[str] = set()
                ended: list[int] = []
                for row in rows:
                    if row[0] in unwritable:
                        continue
                    try:
                        with self.backend.savepoint(c):
                            status = self._reap_one(c, row, now, retry_delay,
                                                    max_lost_attempts)
                    except Exception as e:  # noqa: BLE001 - one row must not stop the rest
                        unwritable.add(row[0])
                        log.warning("job %s: the reaper cannot write it, left running: %s",
                                    row[0], clean(str(e), limit=300))
                        continue
                    if status is None:
                        continue  # fenced: completed or taken back meanwhile
                    moved += 1
                    if status == JobStatus.PENDING:
                        queues.add(row[8])
                    else:
                        ended.append(row[0])
                if queues and self.backend.notifies:
                    self.backend.notify(c, queues)
                self.dialect.ended(c, ended)
            return len(rows), moved

        reaped = 0
        while True:
            read, moved = self.backend.run(batch)
            reaped += moved
            if read < BATCH or not moved:  # (not moved: only rows set aside are left)
                break
        self.backend.run(lambda c, _again: self._sweep_waiting(c, now))
        return reaped

    def _lost_in_a_row(self, c: C, job_id: int, n: int) -> bool:
        """The job's latest ``n`` recorded attempts all ended with their lease expired."""
        if n <= 0:
            return True
        rows = c.execute(self.statements.LAST_OUTCOMES, (job_id, n)).fetchall()
        return len(rows) == n and all(r[0] == Outcome.LEASE_EXPIRED for r in rows)

    def _reap_one(self, c: C, row: Row, now: float, retry_delay: RetryDelay,
                  max_lost: int) -> JobStatus | None:
        """Move one expired job on; its new status, or None when fenced out. A job that
        lost its worker ``max_lost`` attempts in a row (its latest ``max_lost - 1``
        recorded, and this one) goes dead: it is likely what kills them."""
        job_id, token, attempts, max_attempts, worker, started, lease, cancel, _queue, \
            dependents = row
        bad = unreadable(attempts=attempts, max_attempts=max_attempts)
        if bad:
            self._quarantine(c, job_id, token, bad, now)
            return JobStatus.DEAD
        if type(lease) in (int, float) and lease < now:
            error = lease_expired(lease, now)
        else:
            error = (f"running with a lease jobq never grants ({clean(repr(lease))}) "
                     f"under worker {worker!r}: taken back by the reaper")
        status, run_at, finished = after_attempt(attempts, max_attempts, bool(cancel), now,
                                                 retry_delay)
        stored = error
        if status == JobStatus.PENDING and max_lost and self._lost_in_a_row(c, job_id, max_lost - 1):
            status, run_at, finished = JobStatus.DEAD, now, now
            stored = poisoned(max_lost)
        if c.execute(self.statements.LEAVE_RUNNING, (str(status), run_at, attempts, stored, finished,
                                            job_id, token)).rowcount != 1:
            return None
        c.execute(self.statements.RECORD_ATTEMPT, (job_id, attempts, worker, token, started, now,
                                          str(Outcome.LEASE_EXPIRED), error))
        if stored is not error:
            log.warning("job %s: dead as a poison job, its last %d attempts each lost their "
                        "worker (last: %s); handlers that can crash belong in --pool process",
                        job_id, max_lost, clean(str(worker), limit=80))
        if status != JobStatus.PENDING and dependents:
            self._settle(c, job_id, status, now)
        return status
