"""The completer (thread ``jobq-completer``): writes outcomes, with group commit.

Outcomes that arrive while a write is under way wait in the ``Outbox`` (``outbox.py``) and
go together in the next transaction, with the claim of jobs for the slots they free
(``queue.complete_and_claim``: one commit instead of two). Nothing waits on a timer: a
fast write is followed at once by the next. When a commit is slow (an fsync under
synchronous=FULL), the completer waits up to half a commit's time for the handlers still
running, so one commit carries them all.

A run's lease is extended by the heartbeat until the completer has written its outcome
(the run stays in the state's ``runs`` until then).
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

from ..common.error_groups import error_line, first_line
from ..errors import DatabaseUnavailable, JobqError, LeaseLost
from ..queue import Queue
from ..common.textsafe import clean
from ..types import Job, JobStatus
from .claimer import Claimer
from .outbox import Outbox
from .runs import (Failed, Lost, Released, Run, RunState, Snoozed, Succeeded,
                   record_failure)
from .state import State

log = logging.getLogger("jobq.worker")

_GROUP_COMMIT_AFTER = 0.0005  # a write slower than this makes the completer batch harder
_GROUP_COMMIT_MAX = 0.005  # never hold an outcome back longer than this
_LOCKED_RETRY = 0.5  # seconds between tries while the database stays locked


def _result(run: Run) -> Any:
    """The result of a run whose handler succeeded (every run a completion writes)."""
    assert isinstance(run.outcome, Succeeded)
    return run.outcome.result


class _Unwritten:
    """A completion not written for want of the database: to try again."""


UNWRITTEN = _Unwritten()


class Completer:
    def __init__(self, queue: Queue, state: State, outbox: Outbox, claimer: Claimer, *,
                 worker_id: str, queues: Sequence[str] | None, lease: float):
        self._queue = queue
        self._state = state
        self._outbox = outbox
        self._claimer = claimer
        self._worker_id = worker_id
        self._queues = queues
        self._lease = lease
        self._write_took = 0.0  # seconds the last write's transaction took
        self._reader: Queue | None = None  # see _read_job
        self._thread = threading.Thread(target=self._loop, name="jobq-completer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Write everything posted so far, then end the thread."""
        with self._outbox.cv:
            self._outbox.closed = True
            self._outbox.cv.notify()
        self._thread.join()
        if self._reader is not None and self._reader is not self._queue:
            self._reader.close()

    def _loop(self) -> None:
        outbox, state = self._outbox, self._state
        while True:
            with outbox.cv:
                while not outbox.runs and not outbox.closed:
                    outbox.cv.wait()
                self._group_commit()
                batch, outbox.runs = outbox.runs, []
                succeeded, outbox.succeeded = outbox.succeeded, 0
                if not batch and outbox.closed:
                    return
                outbox.writing = True
            again: list[Run] = []
            try:
                again = self._write(batch, succeeded == len(batch))
            except Exception:  # noqa: BLE001 - keep writing later outcomes; leases expire
                log.exception("writing the outcomes of %d job(s) failed", len(batch))
            if again:  # the database was locked: try again shortly, the runs still ours
                self._state.stopping.wait(_LOCKED_RETRY)
                retried = {id(r) for r in again}
                batch = [r for r in batch if id(r) not in retried]
            runs = state.runs
            with state.lock:
                for run in batch:
                    run.state = RunState.GONE
                    runs.pop(run.job.id, None)
                outbox.runs[:0] = again
                outbox.writing = False
                full = state.running >= state.concurrency
            if not full:  # the claim loop has slots to fill (or nothing left to wait for)
                state.wake.set()

    def _group_commit(self) -> None:
        """When a write is slow (an fsync per commit under synchronous=FULL), wait up to
        half a write's time for the other running handlers to finish, so that one commit
        carries all their outcomes. Fast writes never wait. Called holding ``outbox.cv``."""
        outbox = self._outbox
        if self._write_took < _GROUP_COMMIT_AFTER or outbox.closed:
            return
        deadline = time.monotonic() + min(self._write_took / 2, _GROUP_COMMIT_MAX)
        while self._state.running and not outbox.closed:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            outbox.cv.wait(left)

    def _write(self, batch: list[Run], all_succeeded: bool = False) -> list[Run]:
        """Write the batch's outcomes; returns the completions to write again (the
        database stayed locked, and their leases may not have run out yet).
        ``all_succeeded``: every run of the batch succeeded (the common case, which skips
        looking for other outcomes)."""
        if any(r.ctx.completed_on_conn for r in batch):
            batch = [r for r in batch if not (r.ctx.completed_on_conn and self._settled(r))]
        done = batch if all_succeeded else [r for r in batch
                                            if isinstance(r.outcome, Succeeded)]
        if done:
            accepted: Sequence[bool | None | _Unwritten]
            try:
                accepted = self._complete(done)
            except JobqError as e:
                accepted, unavailable = self._complete_each(done, e)
                again = self._to_retry(done, accepted, unavailable)
                self._count_completed(done, accepted)
                if again:
                    return again + [r for r in batch if not isinstance(r.outcome, Succeeded)]
            else:
                self._count_completed(done, accepted)
        if done is batch:
            return []
        for run in batch:
            try:
                if isinstance(run.outcome, Failed):
                    self._write_failure(run, run.outcome)
                elif isinstance(run.outcome, Released):
                    self._write_release(run)
                elif isinstance(run.outcome, Snoozed):
                    self._write_snooze(run, run.outcome)
            except Exception:  # noqa: BLE001 - one outcome must not cost the others theirs
                log.exception("%s: writing its outcome failed (its lease will expire)",
                              run.describe())
        return []

    def _complete_each(self, done: list[Run], error: JobqError
                       ) -> tuple[list[bool | None | _Unwritten], DatabaseUnavailable | None]:
        """After a batch of completions failed whole: each one alone, so that one the
        database refuses (PostgreSQL reports a refused row as unavailable too) costs only
        its own outcome. Per run: accepted, fenced out (False), refused (None) or
        ``UNWRITTEN`` (to try again while its lease lasts), and the unavailability seen.

        An unavailable database fails every write, each after its timeout: so a batch's
        first failure is tried again whole, and one by one only from its second failure
        on, runs that failed alone before going last; a failure before any success ends
        the round."""
        unavailable = error if isinstance(error, DatabaseUnavailable) else None
        if unavailable is not None and (len(done) == 1 or all(r.write_until is None
                                                              for r in done)):
            return [UNWRITTEN] * len(done), unavailable
        if len(done) == 1:
            log.error("completing %s failed (its lease will expire and it runs again): %s",
                      done[0].describe(), error)
            return [None], None
        outcome: dict[int, bool | None | _Unwritten] = {}
        wrote = stop = False
        for run in sorted(done, key=lambda r: r.write_failures):
            if stop:
                outcome[id(run)] = UNWRITTEN  # the database, not one row: later
                continue
            try:
                ok, = self._queue.complete_many([(run.job.id, run.token, _result(run))])
            except DatabaseUnavailable as e:
                unavailable, outcome[id(run)] = e, UNWRITTEN
                run.write_failures += 1
                stop = not wrote
            except JobqError as e:
                log.error("completing %s failed (its lease will expire and it runs again): "
                          "%s", run.describe(), e)
                outcome[id(run)] = None
            else:
                wrote, outcome[id(run)] = True, ok
        return [outcome[id(r)] for r in done], unavailable

    def _to_retry(self, done: list[Run], accepted: list[bool | None | _Unwritten],
                  error: JobqError | None) -> list[Run]:
        """The unwritten completions to try again: those whose leases may still last (the
        heartbeat extended them a beat ago at best); the others are given up, logged."""
        now = time.monotonic()
        again: list[Run] = []
        given_up = 0
        for i, (run, ok) in enumerate(zip(done, accepted)):
            if ok is not UNWRITTEN:
                continue
            if run.write_until is None:
                run.write_until = now + run.lease
            if now < run.write_until:
                again.append(run)
            else:
                accepted[i] = None
                given_up += 1
        if again:
            log.warning("completing %d job(s) failed, trying again while their leases "
                        "last: %s", len(again), error)
        if given_up:
            log.error("completing %d job(s) failed (their leases will expire and they run "
                      "again): %s", given_up, error)
        return again

    def _count_completed(self, done: list[Run],
                         accepted: Sequence[bool | None | _Unwritten]) -> None:
        verbose = log.isEnabledFor(logging.INFO)
        if not verbose and accepted.count(True) == len(done):  # every one, nothing to log
            self._state.count_all(done, "succeeded")
            return
        self._state.count_all([r for r, ok in zip(done, accepted) if ok is True], "succeeded")
        for run, ok in zip(done, accepted):
            if ok is True:
                if verbose:
                    log.info("%s succeeded in %.3fs", run.describe(), run.took())
            elif ok is False:
                self._state.count(run, "lost")
                log.warning("%s lease lost before completion: result discarded (the job "
                            "was reaped or taken over)", run.describe())

    def _settled(self, run: Run) -> bool:
        """For a run whose handler completed its job on the application's connection
        (``ctx.complete(conn=...)``): read the job to learn whether that transaction
        committed. True when there is nothing to write: the job is succeeded under this
        run's token (that commit did it), or it is no longer this run's. False when it is
        still running under this run's token (the application rolled back): the
        handler's outcome is written as usual."""
        try:
            job = self._read_job(run.job.id)
        except JobqError as e:  # write the outcome as usual: the fence decides
            log.warning("%s: reading the job after its completion on the application's "
                        "connection failed: %s", run.describe(), e)
            return isinstance(run.outcome, Lost)
        # the job's status while it is still this run's; None when not
        status = job.status if job is not None and job.token == run.token else None
        if status == JobStatus.SUCCEEDED:
            self._state.count(run, "succeeded")
            if isinstance(run.outcome, Failed):
                log.warning("%s was completed in the application's transaction, then its "
                            "handler failed; the job stays succeeded: %s", run.describe(),
                            clean(first_line(run.outcome.error.rstrip().rsplit("\n", 1)[-1]),
                                  limit=200))
            elif log.isEnabledFor(logging.INFO):
                log.info("%s succeeded in %.3fs (in the application's transaction)",
                         run.describe(), run.took())
            return True
        if status == JobStatus.RUNNING and not isinstance(run.outcome, Lost):
            log.info("%s: the application's transaction with its completion was rolled "
                     "back; recording the handler's outcome", run.describe())
            return False
        self._state.count(run, "lost")
        log.warning("%s lease lost: the job was reaped or taken over before the application's "
                    "transaction committed (its writes were rolled back with the completion)",
                    run.describe())
        return True

    def _read_job(self, job_id: int) -> Job | None:
        """The job, read on a read-only connection of the completer's own, opened on first
        use. On the worker's shared connection the read queued behind the claimer's write
        while that waited for the applications' transactions to release SQLite's write
        lock. A drain of 3,000 jobs that each add 1 to a row of the application's (SQLite,
        4 slots, median of 3 alternating rounds) ran at 494 jobs/s that way against 1,027
        the plain way (commit, then return), and at 970 against 1,051 with this reader."""
        if self._reader is None:
            try:
                reader = Queue(self._queue.database, read_only=True)
            except JobqError as e:
                log.warning("no read-only connection for the completer (%s): reading on the "
                            "worker's", e)
                reader = self._queue
            if reader.frozen:  # a fixed copy would never see the application's commit
                reader.close()
                reader = self._queue
            self._reader = reader
        return self._reader.get(job_id)

    def _complete(self, done: list[Run]) -> list[bool]:
        """Write completions, claiming jobs for the free slots in the same transaction
        (none once the worker is stopping)."""
        # Every run of done succeeded: the isinstance, which drops none, tells the checker
        items = [(r.job.id, r.token, r.outcome.result) for r in done
                 if isinstance(r.outcome, Succeeded)]
        if self._state.stopping.is_set():
            return self._queue.complete_many(items)
        claimer = self._claimer
        with claimer.lock:
            free = self._state.free_slots()
            started = time.monotonic()
            accepted, jobs = self._queue.complete_and_claim(
                items, self._worker_id, max(0, free), queues=self._queues, lease=self._lease,
                attempt_limits=claimer.attempt_limits)
            # The transaction alone: starting the claimed jobs (for a process pool, a send
            # to a child each) is not a commit's cost, and counted as one it made the
            # completer wait for every running handler after each write, in lockstep.
            self._write_took = time.monotonic() - started
            claimer.adopt(jobs, free)
        return accepted

    def _write_failure(self, run: Run, failed: Failed) -> None:
        error = failed.error
        try:  # whether attempts are left, and the delay: decided once (store.attempts)
            job = record_failure(self._queue, run.job, run.token, run.task, failed)
        except LeaseLost:
            self._state.count(run, "lost")
            log.warning("%s failed after losing its lease: nothing recorded", run.describe())
            return
        except JobqError as e:
            log.error("%s failed, and recording it failed too: %s", run.describe(), e)
            return
        summary = clean(error_line(error), limit=200)
        if job.status == JobStatus.CANCELLED:
            self._state.count(run, "cancelled")
            log.info("%s cancelled after %.3fs", run.describe(), run.took())
            return
        if failed.timed_out:
            self._state.count(run, "timed_out")
        if job.status == JobStatus.PENDING:
            self._claimer.expect_retry()
            if not failed.timed_out:
                self._state.count(run, "failed")
            log.warning("%s failed in %.3fs, retry in %.1fs: %s", run.describe(), run.took(),
                        max(0.0, job.run_at - self._queue.clock.now()), summary)
        else:
            if not failed.timed_out:
                self._state.count(run, "dead")
            log.error("%s failed in %.3fs, dead (%s): %s", run.describe(), run.took(),
                      "not retried" if failed.give_up else "no attempts left", summary)

    def _write_snooze(self, run: Run, snoozed: Snoozed) -> None:
        try:
            self._queue.snooze(run.job.id, run.token, snoozed.seconds)
        except LeaseLost:
            self._state.count(run, "lost")
            log.warning("%s snoozed after losing its lease: nothing recorded", run.describe())
            return
        except JobqError as e:
            log.error("%s snoozed, and recording it failed: %s", run.describe(), e)
            return
        self._state.count(run, "snoozed")
        self._claimer.expect_retry()
        log.info("%s snoozed for %.1fs after %.3fs", run.describe(), snoozed.seconds,
                 run.took())

    def _write_release(self, run: Run) -> None:
        try:
            self._queue.release(run.job.id, run.token)
        except JobqError as e:
            log.warning("%s could not be released (%s); its lease will expire",
                        run.describe(), e)
            return
        self._state.count(run, "released")
        log.info("%s released unfinished after %.3fs (shutdown): it can run again at once",
                 run.describe(), run.took())
