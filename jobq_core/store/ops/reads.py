"""What the CLI and the monitor read, written once for every store. Reads of several
statements run in one snapshot (``Backend.snapshot``), so their counts agree."""
from __future__ import annotations

from collections.abc import Sequence

from ...common.error_groups import group_dead
from ...types import Attempt, ErrorGroup, Hold, Job, QueueStats, Stats, Throughput
from .. import listing
from ..base import ListFilter
from ..dbapi import C, Row, count
from ..rows import (
    THROUGHPUT_FAILED, attempts_from_rows, controls_from_row, job_from_row, stats_from_rows,
    throughput_from_rows,
)
from ._base import Operations
from .admin import dead


class Reads(Operations[C]):
    def job_get(self, job_id: int) -> Job | None:
        return self.backend.run(lambda c, _again: self._get(c, job_id))

    def job_statuses(self, job_ids: Sequence[int]) -> dict[int, str]:
        if not job_ids:
            return {}
        ids = self.dialect.list_param(list(job_ids))
        rows = self.backend.run(lambda c, _again: c.execute(
            self.statements.STATUSES, (ids,)).fetchall())
        return {int(job_id): str(status) for job_id, status in rows}

    def job_list(self, where: ListFilter, now: float) -> list[Job]:
        conds, params, order = listing.list_conditions(self.dialect.MATCHING, where, now)
        columns = self.dialect.FRAGMENTS["job_cols" if where.payloads else "job_cols_lean"]
        query = self.dialect.native(listing.listing(conds, order, columns))
        rows = self.backend.run(lambda c, _again: c.execute(
            query, [*params, where.limit, where.offset]).fetchall())
        return [job_from_row(r) for r in rows]

    def job_count(self, where: ListFilter, now: float) -> int:
        conds, params, _ = listing.list_conditions(self.dialect.MATCHING, where, now)
        query = self.dialect.native(listing.counting(conds))
        return self.backend.run(lambda c, _again: count(c.execute(query, params)))

    def job_attempts(self, job_id: int) -> list[Attempt]:
        def op(c: C, _again: bool) -> tuple[list[Row], Row | None]:
            with self.backend.snapshot(c):
                return (c.execute(self.statements.ATTEMPTS_ENDED, (job_id,)).fetchall(),
                        c.execute(self.statements.ATTEMPT_CURRENT, (job_id,)).fetchone())

        return attempts_from_rows(job_id, *self.backend.run(op))

    def job_throughput(self, start: float, bucket: float, buckets: int) -> Throughput:
        end = start + bucket * buckets

        def op(c: C, _again: bool) -> list[Row]:
            with self.backend.snapshot(c):
                return (c.execute(self.statements.THROUGHPUT_FINISHED, (start, bucket, start, end))
                        .fetchall()
                        + c.execute(self.statements.THROUGHPUT_FAILED, (
                            start, bucket, start, end, *map(str, THROUGHPUT_FAILED))).fetchall())

        return throughput_from_rows(start, bucket, buckets, self.backend.run(op))

    def job_dead_groups(self, where: ListFilter) -> list[ErrorGroup]:
        conds, params, _ = listing.list_conditions(self.dialect.MATCHING, dead(where), 0.0)
        query = self.statements.DEAD_GROUPS.format(where=self.dialect.native(" AND ".join(conds)))
        rows = self.backend.run(lambda c, _again: c.execute(query, params).fetchall())
        return group_dead(((kind, f"{first}\n{tail}", n, finished, last_id,
                            self._queue_list(queues))
                           for kind, first, tail, n, finished, last_id, queues in rows),
                          where.limit)

    def _queue_list(self, value: object) -> list[str]:
        """A ``queue_list`` aggregate's value (queue names: never empty, never NULL)."""
        names = self.dialect.read_list(value)
        assert isinstance(names, list)  # json_group_array's text (SQLite), array_agg's list
        return list(names)

    def queue_state(self, queue: str) -> QueueStats:
        """The queue's controls (none, for a queue without) and its running jobs: one
        snapshot."""
        def op(c: C, _again: bool) -> tuple[Row | None, int]:
            with self.backend.snapshot(c):
                return (c.execute(self.statements.QUEUE_STATE, (queue,)).fetchone(),
                        count(c.execute(self.statements.RUNNING_IN_QUEUE, (queue,))))

        return controls_from_row(*self.backend.run(op))

    def key_holders(self, queue: str, key: str, job_id: int,
                    cap: int) -> tuple[list[int], int | None]:
        """(The running jobs of ``key`` in ``queue``, at most ``cap``; the first open job of
        the key before ``job_id``, or None): one snapshot."""
        def op(c: C, _again: bool) -> tuple[list[int], int | None]:
            with self.backend.snapshot(c):
                running: list[int] = [r[0] for r in c.execute(
                    self.statements.KEY_RUNNING, (queue, key, cap)).fetchall()]
                earlier = c.execute(self.statements.KEY_EARLIER, (queue, key, job_id)).fetchone()
                first: int | None = None if earlier is None else earlier[0]
                return running, first

        return self.backend.run(op)

    def job_holds(self, job_ids: Sequence[int]) -> dict[int, Hold]:
        params = (self.dialect.list_param(list(job_ids)),)
        rows = self.backend.run(lambda c, _again: c.execute(self.statements.HOLDS, params).fetchall())
        return {job_id: Hold(running, earlier, waits_on)
                for job_id, running, earlier, waits_on in rows}

    def job_ahead(self, job: Job, now: float, cap: int) -> int:
        """Ready jobs of ``job``'s queue a claim would take before it (at most ``cap``)."""
        params = (job.queue, now, job.priority, job.priority, job.run_at, job.run_at, job.id, cap)
        return self.backend.run(lambda c, _again: count(c.execute(self.statements.AHEAD, params)))

    def stats(self, now: float, window: float) -> Stats:
        def op(c: C, _again: bool) -> tuple[list[Row], list[Row], list[Row], dict[str, int],
                                            list[Row], list[Row], list[Row]]:
            with self.backend.snapshot(c):
                return (c.execute(self.statements.PENDING_BY_QUEUE, (now, now, now)).fetchall(),
                        c.execute(self.statements.RUNNING_BY_QUEUE, (now,)).fetchall(),
                        c.execute(self.statements.DEAD_BY_QUEUE).fetchall(),
                        dict(c.execute(self.statements.RECENT_FINISHED, (now - window,)).fetchall()),
                        c.execute(self.statements.QUEUE_CONTROLS).fetchall(),
                        c.execute(self.statements.WAITING_BY_QUEUE).fetchall(),
                        c.execute(self.statements.DECLARED).fetchall())

        return stats_from_rows(now, window, *self.backend.run(op))
