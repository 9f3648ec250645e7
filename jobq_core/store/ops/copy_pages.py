"""Copying jobs between stores, written once for every store: a page of a source
(``job_copy_out``), and into a destination its start (``copy_begin``: the copy's record,
queue controls, schedules) and its pages (``job_copy_in``). Which jobs go, in what order,
and how their ids map is ``jobq_core/api/copying.py``'s policy."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...errors import DatabaseUnavailable, InvalidState
from ...types import JobStatus, QueueStats, ScheduleInfo
from ..copy_records import CopiedJob, CopyMark, CopyPage, CopyStart
from ..dbapi import C, Row
from ..rows import job_from_row
from ._base import Operations

_LIVE = (JobStatus.PENDING, JobStatus.WAITING)


class Copying(Operations[C]):
    def job_copy_out(self, statuses: Sequence[str], after: int, limit: int) -> CopyPage:
        names = self.dialect.list_param([str(s) for s in statuses])

        def op(c: C, _again: bool) -> tuple[list[Row], list[Row]]:
            with self.backend.snapshot(c):
                rows = c.execute(self.statements.COPY_OUT, (after, names, names, limit)).fetchall()
                ids = self.dialect.list_param([r[0] for r in rows])
                return rows, c.execute(self.statements.COPY_OUT_DEPS, (ids,)).fetchall() if rows else []

        rows, edges = self.backend.run(op)
        waits_on: dict[int, list[tuple[int, bool]]] = {}
        for job_id, target, allow_failed in edges:
            waits_on.setdefault(job_id, []).append((target, bool(allow_failed)))
        # a row is Job's fields, which job_from_row reads, then has_dependents
        return CopyPage([job_from_row(r) for r in rows],
                        frozenset(r[0] for r in rows if r[-1]), waits_on)

    def copy_begin(self, key: str, record: str, queues: Mapping[str, QueueStats],
                   schedules: Sequence[ScheduleInfo], now: float) -> CopyStart:
        def op(c: C, again: bool) -> CopyStart:
            with self.backend.transaction(c):
                if c.execute(self.statements.COPY_MARK_NEW, (key, record)).rowcount != 1:
                    mark_row = c.execute(self.statements.COPY_MARK, (key,)).fetchone()
                    # the insert above met the key's row, in this transaction
                    assert mark_row is not None, "COPY_MARK_NEW found the copy's record"
                    existing: str = mark_row[0]
                    if again and existing == record:
                        raise DatabaseUnavailable(
                            f"{self.backend.where}: the connection broke as the copy began, after "
                            "it had begun: resume it to go on")
                    return CopyStart(existing)
                added: list[str] = []
                for name, x in queues.items():
                    rate = (x.rate.limit, x.rate.per) if x.rate else (None, None)
                    if c.execute(self.statements.COPY_QUEUE, (name, x.paused, x.concurrency, *rate,
                                                     x.key_concurrency, x.ordered,
                                                     now)).rowcount == 1:
                        added.append(name)
                if added:
                    self.backend.limits_changed(c)
                ticks = [s.key for s in schedules if c.execute(self.statements.SCHEDULE_REGISTER, (
                    s.key, s.kind, s.queue, s.every, s.cron, s.tz, s.last_tick,
                    s.updated_at)).rowcount == 1]
                return CopyStart(None, tuple(added), tuple(ticks))

        start = self.backend.run(op)
        self._controls.forget()
        return start

    def job_copy_in(self, jobs: Sequence[CopiedJob], now: float,
                    mark: CopyMark | None = None) -> list[tuple[int, bool]]:
        def op(c: C, again: bool) -> list[tuple[int, bool]]:
            if mark is None:
                self._refuse_if_maybe_committed(again)
            placed: list[tuple[int, bool]] = []
            with self.backend.transaction(c):
                # First: a second copier, or this one's own page committed before the
                # connection broke, finds the record moved and writes nothing.
                if mark and c.execute(self.statements.COPY_MARK_MOVE,
                                      (mark.new, mark.key, mark.old)).rowcount != 1:
                    raise InvalidState(
                        f"{self.backend.where}: the record of this copy changed as it was writing "
                        "(another copy from the same source, or this page written before the "
                        "connection broke); resume the copy to go on")
                for x in jobs:
                    placed.append(self._copy_one(c, x, [p[0] for p in placed], now))
                if self.backend.notifies:
                    self.backend.notify(c, {x.job.queue for x in jobs if x.status in _LIVE})
            return placed

        return self.backend.run(op)

    def _copy_one(self, c: C, x: CopiedJob, earlier: list[int], now: float) -> tuple[int, bool]:
        """Inside the page's transaction: one job; ``earlier``: the ids the page's jobs
        before it got (or the holders of their keys)."""
        job, live = x.job, x.status in _LIVE
        if live and job.unique_key is not None:
            job_id = self.dialect.insert_unique(c, job, x.created_at)
            if job_id is None:  # a live job here holds its key
                holder = c.execute(self.statements.LIVE_WITH_KEY, (job.unique_key,)).fetchone()
                # in the page's transaction, which holds the write lock or the key's row
                assert holder is not None, "the job that refused the key is still live"
                return holder[0], True
        else:  # an ended job keeps its key: the unique index covers live jobs only
            [job_id] = self.dialect.insert_plain(c, [job._replace(unique_key=None)], x.created_at, [])
        c.execute(self.statements.COPY_STATE, (str(JobStatus.PENDING) if live else x.status, x.attempts,
                                      x.error, x.finished_at, x.result, job.unique_key, job_id))
        if x.deps is not None:
            targets = list(dict.fromkeys([*x.deps.ids, *(earlier[i] for i in x.deps.earlier)]))
            if live:  # waiting, pending or cancelled, as an enqueue ``after`` them would be
                self._wait_for(c, job_id, targets, x.deps.allow_failed, now)
            else:  # ended: the edges keep what it waited on readable
                self._link(c, job_id, targets, x.deps.allow_failed)
        for key in x.schedules:
            c.execute(self.statements.SCHEDULE_JOB, (job_id, key))
        return job_id, False
