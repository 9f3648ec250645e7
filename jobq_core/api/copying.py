"""``Queue``'s verbs for carrying a queue in from another store (a mixin of ``Queue``):
``copy_from``, what ``jobq copy`` runs, and ``copy_in``, its lower-level piece.

How ``copy_from`` goes:

* The source's queue controls and schedules arrive first, in one transaction with the
  copy's record (below). A queue or schedule the destination has already keeps the
  destination's own.
* Then its jobs, read in id order a page at a time, each page written in one transaction.
  A job gets a new id, the destination's; ids only grow, so the jobs a job waits on come
  before it, and their new ids are known when it is written: the edges are mapped.
* Pending, waiting and dead jobs arrive as they are; a running job arrives pending
  (``new_jobs.copied_job``). The finished jobs a copied job waits or waited on come along,
  as they ended, so that it still reads their results (``dependency_results``).
* A job is left behind, and counted by reason (``CopySkip``), when a live job of the
  destination holds its unique key (the jobs waiting on it then wait on that holder, as an
  enqueue would have given it to them), or when it is live and waits on a job that was
  not copied (it would run without what it needs). A finished job keeps the links it can.
* The record, in the destination's ``jobq_meta`` under the source's location, says how far
  the copy got: the last source id read. Each page moves it in the page's transaction, so
  it is exact whenever the copy stops. A second copy from the same source is refused
  before it writes anything; ``resume`` goes on after the recorded id instead, so no job is
  copied twice. The map of new ids lives in memory: after a resume, a job that waits on one
  copied before it is left behind (``DEPENDENCY_COPIED_EARLIER``).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from ..clock import Clock
from ..common.time_text import timestamp
from ..errors import InvalidState
from .new_jobs import copied_job
from ..store.base import ListFilter, Store
from ..store.copy_records import CopiedJob, CopyMark, CopyPage
from ..types import COPY_STATUSES, FINISHED, CopyReport, CopySkip, Deps, Job, JobStatus

PAGE = 500
MARK_PREFIX = "copied_from "  # + the source's location: the key of a copy's record
_TAKES = (JobStatus.PENDING, JobStatus.RUNNING, JobStatus.DEAD)  # what copy_in takes


class Copying:
    store: Store
    clock: Clock

    def copy_from(self, source: Copying, *, statuses: Iterable[str] = COPY_STATUSES,
                  resume: bool = False,
                  on_page: Callable[[CopyReport], None] | None = None) -> CopyReport:
        """Copy the jobs of ``statuses`` (some of pending, running, waiting, dead; a
        running one arrives pending), the jobs they wait on, the queue controls and the
        schedules of ``source`` (another store, left unchanged) into this queue, a page of
        500 jobs per transaction; ``on_page`` is called after each. Jobs get new ids; a
        job whose unique key a live job here holds, or that waits on a job not copied, is
        left behind (``CopyReport.skipped`` says why). This store records the copy:
        ``InvalidState``, nothing written, for a second copy from the same source;
        ``resume`` goes on after the last job it read instead (after an interruption, or
        to copy the jobs added since), never copying a job twice (with no record, it
        begins the copy)."""
        given = [str(s) for s in statuses]
        wanted = tuple(str(s) for s in COPY_STATUSES if s in given)  # in one order, as recorded
        if not given or len(wanted) < len(set(given)):
            raise ValueError(f"statuses must be some of {', '.join(COPY_STATUSES)}, got "
                             f"{', '.join(given) or 'none'}")
        run = _Copy(source.store, self.store, wanted, self.clock.now())
        run.begin(resume)
        while run.page():
            if on_page is not None:
                on_page(run.report())
        return run.report()

    def copy_in(self, jobs: Iterable[Job]) -> list[int]:
        """Add pending, running and dead jobs read from another queue (its ``list`` with
        payloads), as they were: status, attempts, last error, times, unique key, key and
        trace context; a running one arrives pending. One transaction; the new ids in
        order. Their attempt history and what they wait on stay behind (``copy_from``
        carries those). A pending job whose unique key a live job here holds yields that
        job's id instead."""
        now = self.clock.now()
        copied = []
        for job in jobs:
            if job.status not in _TAKES:
                raise InvalidState(f"job {job.id} is {job.status}; only pending, running and "
                                   "dead jobs can be copied in (copy_from carries the rest)")
            copied.append(copied_job(job, now))
        return [job_id for job_id, _held in self.store.job_copy_in(copied, now)] if copied else []


class _Copy:
    """One run of ``copy_from``: its record, its map of ids, its counts."""

    def __init__(self, source: Store, target: Store, statuses: tuple[str, ...], now: float):
        self.source, self.target, self.statuses, self.now = source, target, statuses, now
        self.where = source.location()
        if self.where == target.location():
            raise ValueError(f"{self.where} is both the source and the destination")
        self.key = MARK_PREFIX + self.where
        self.after = self.resumed_from = 0  # the last source id read; the one resumed after
        self.resumed = False
        self.record, self.started = "", now  # the record as last written; when it began
        self.placed: dict[int, int] = {}  # source id -> id here, of the jobs others wait on
        self.last_of: dict[int, tuple[str, ...]] = {}  # source id -> schedules it last ticked
        self.copied: dict[str, int] = {s: 0 for s in statuses}
        self.skipped: dict[str, dict[str, int]] = {}
        self.queues: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())  # copied, kept
        self.schedules: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())

    def begin(self, resume: bool) -> None:
        queues, schedules = self.source.queue_controls(), self.source.schedule_list()
        record = self._record(0, self.started)
        start = self.target.copy_begin(self.key, record, queues, schedules, self.now)
        if start.existing is not None:
            self._resume(start.existing, resume)
            return
        self.record = record
        self.queues = start.queues, tuple(q for q in queues if q not in start.queues)
        self.schedules = (start.schedules,
                          tuple(s.key for s in schedules if s.key not in start.schedules))
        for s in schedules:
            if s.key in start.schedules and s.last_job is not None:
                self.last_of[s.last_job] = (*self.last_of.get(s.last_job, ()), s.key)

    def _resume(self, existing: str, resume: bool) -> None:
        found = json.loads(existing)
        through, started = int(found["through"]), float(found["started"])
        if not resume:
            raise InvalidState(
                f"{self.target.location()} already holds a copy of {self.where} (begun "
                f"{timestamp(started)}, through its job {through}): copying it again would "
                f"add its jobs twice; resume it instead (jobq copy --resume, "
                f"copy_from(resume=True)) to copy only the jobs after {through}")
        if list(found["statuses"]) != list(self.statuses):
            raise InvalidState(f"the copy of {self.where} into {self.target.location()} "
                               f"takes {', '.join(found['statuses'])}: resume it with the "
                               "same statuses")
        newest = self.source.job_list(ListFilter(limit=1, payloads=False), self.now)
        if through and (not newest or newest[0].id < through):
            raise InvalidState(f"{self.where} has no job up to {through}, the last one copied "
                               "from it: it is not the database copied then")
        self.record, self.after, self.started = existing, through, started
        self.resumed_from, self.resumed = through, True

    def page(self) -> bool:
        """Copy the next page; False when there was none."""
        page = self.source.job_copy_out(self.statuses, self.after, PAGE)
        if not page.jobs:
            return False
        batch, jobs, skips = self._batch(page)
        through = page.jobs[-1].id
        record = self._record(through, self.started)
        placed = self.target.job_copy_in(batch, self.now, CopyMark(self.key, self.record, record))
        self.record, self.after = record, through
        for job, (job_id, held) in zip(jobs, placed):
            if job.id in page.depended_on:
                self.placed[job.id] = job_id  # a holder stands for the job it held out
            status = str(job.status)
            if held:
                skips.append((status, CopySkip.UNIQUE_KEY_HELD))
            else:
                self.copied[status] = self.copied.get(status, 0) + 1
        for status, reason in skips:
            counts = self.skipped.setdefault(status, {})
            counts[reason] = counts.get(reason, 0) + 1
        return True

    def _batch(self, page: CopyPage,
               ) -> tuple[list[CopiedJob], list[Job], list[tuple[str, CopySkip]]]:
        """The page's jobs that can be copied, with what each waits on mapped to ids here
        (earlier pages) or to positions in the batch; and those that cannot, with why."""
        batch: list[CopiedJob] = []
        jobs: list[Job] = []
        skips: list[tuple[str, CopySkip]] = []
        position: dict[int, int] = {}
        for job in page.jobs:
            edges = page.waits_on.get(job.id, [])
            ids, earlier, missing = [], [], None
            for target, _ in edges:
                if target in position:
                    earlier.append(position[target])
                elif target in self.placed:
                    ids.append(self.placed[target])
                elif missing is None:
                    missing = (CopySkip.DEPENDENCY_COPIED_EARLIER if target <= self.resumed_from
                               else CopySkip.DEPENDENCY_NOT_COPIED)
            if missing is not None and job.status not in FINISHED:
                skips.append((str(job.status), missing))  # it would run without what it needs
                continue
            # a finished job keeps the links it can: it has read what it waited on already
            # enqueue gives every edge of a job one allow_failed; take the strict reading
            deps = Deps(tuple(ids), tuple(earlier), all(a for _, a in edges)) if (
                ids or earlier) else None
            position[job.id] = len(batch)
            batch.append(copied_job(job, self.now, deps, self.last_of.get(job.id, ())))
            jobs.append(job)
        return batch, jobs, skips

    def _record(self, through: int, started: float) -> str:
        return json.dumps({"from": self.where, "statuses": list(self.statuses),
                           "through": through, "started": started}, sort_keys=True)

    def report(self) -> CopyReport:
        return CopyReport(dict(self.copied),
                          {s: {str(r): n for r, n in c.items()} for s, c in self.skipped.items()},
                          *self.queues, *self.schedules, self.after, self.resumed)
