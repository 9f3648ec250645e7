"""What the CLI and the monitor read, written once for every store. Reads of several
statements run in one snapshot (``Backend.snapshot``), so their counts agree."""
from __future__ import annotations

from collections.abc import Sequence

from ...error_groups import group_dead
from ...types import Attempt, ErrorGroup, Hold, Job, QueueStats, Stats, Throughput
from .. import sql
from ..base import ListFilter
from ..rows import (
    THROUGHPUT_FAILED, attempts_from_rows, controls_from_row, job_from_row, stats_from_rows,
    throughput_from_rows,
)
from ._base import Operations
from .admin import dead


class Reads(Operations):
    def job_get(self, job_id: int) -> Job | None:
        return self.b.run(lambda c, _again: self._get(c, job_id))

    def job_list(self, where: ListFilter, now: float) -> list[Job]:
        conds, params, order = sql.list_conditions(self.d.MATCHING, where, now)
        columns = self.d.FRAGMENTS["job_cols" if where.payloads else "job_cols_lean"]
        query = self.d.native(sql.listing(conds, order, columns))
        rows = self.b.run(lambda c, _again: c.execute(
            query, [*params, where.limit, where.offset]).fetchall())
        return [job_from_row(r) for r in rows]

    def job_count(self, where: ListFilter, now: float) -> int:
        conds, params, _ = sql.list_conditions(self.d.MATCHING, where, now)
        query = self.d.native(sql.counting(conds))
        return self.b.run(lambda c, _again: c.execute(query, params).fetchone()[0])

    def job_attempts(self, job_id: int) -> list[Attempt]:
        def op(c, _again: bool):
            with self.b.snapshot(c):
                return (c.execute(self.q.ATTEMPTS_ENDED, (job_id,)).fetchall(),
                        c.execute(self.q.ATTEMPT_CURRENT, (job_id,)).fetchone())

        return attempts_from_rows(job_id, *self.b.run(op))

    def job_throughput(self, start: float, bucket: float, buckets: int) -> Throughput:
        end = start + bucket * buckets

        def op(c, _again: bool) -> list:
            with self.b.snapshot(c):
                return (c.execute(self.q.THROUGHPUT_FINISHED, (start, bucket, start, end))
                        .fetchall()
                        + c.execute(self.q.THROUGHPUT_FAILED, (
                            start, bucket, start, end, *map(str, THROUGHPUT_FAILED))).fetchall())

        return throughput_from_rows(start, bucket, buckets, self.b.run(op))

    def job_dead_groups(self, where: ListFilter) -> list[ErrorGroup]:
        conds, params, _ = sql.list_conditions(self.d.MATCHING, dead(where), 0.0)
        query = self.q.DEAD_GROUPS.format(where=self.d.native(" AND ".join(conds)))
        rows = self.b.run(lambda c, _again: c.execute(query, params).fetchall())
        return group_dead(((kind, f"{first}\n{tail}", n, finished, last_id,
                            list(self.d.read_list(queues)))
                           for kind, first, tail, n, finished, last_id, queues in rows),
                          where.limit)

    def queue_state(self, queue: str) -> QueueStats:
        """The queue's controls (none, for a queue without) and its running jobs: one
        snapshot."""
        def op(c, _again: bool):
            with self.b.snapshot(c):
                return (c.execute(self.q.QUEUE_STATE, (queue,)).fetchone(),
                        c.execute(self.q.RUNNING_IN_QUEUE, (queue,)).fetchone()[0])

        return controls_from_row(*self.b.run(op))

    def key_holders(self, queue: str, key: str, job_id: int,
                    cap: int) -> tuple[list[int], int | None]:
        """(The running jobs of ``key`` in ``queue``, at most ``cap``; the first open job of
        the key before ``job_id``, or None): one snapshot."""
        def op(c, _again: bool):
            with self.b.snapshot(c):
                running = [r[0] for r in c.execute(self.q.KEY_RUNNING, (queue, key, cap))]
                earlier = c.execute(self.q.KEY_EARLIER, (queue, key, job_id)).fetchone()
                return running, None if earlier is None else earlier[0]

        return self.b.run(op)

    def job_holds(self, job_ids: Sequence[int]) -> dict[int, Hold]:
        params = (self.d.list_param(list(job_ids)),)
        rows = self.b.run(lambda c, _again: c.execute(self.q.HOLDS, params).fetchall())
        return {job_id: Hold(running, earlier, waits_on)
                for job_id, running, earlier, waits_on in rows}

    def job_ahead(self, job: Job, now: float, cap: int) -> int:
        """Ready jobs of ``job``'s queue a claim would take before it (at most ``cap``)."""
        params = (job.queue, now, job.priority, job.priority, job.run_at, job.run_at, job.id, cap)
        return self.b.run(lambda c, _again: c.execute(self.q.AHEAD, params).fetchone()[0])

    def stats(self, now: float, window: float) -> Stats:
        def op(c, _again: bool):
            with self.b.snapshot(c):
                return (c.execute(self.q.PENDING_BY_QUEUE, (now, now)).fetchall(),
                        c.execute(self.q.RUNNING_BY_QUEUE, (now,)).fetchall(),
                        c.execute(self.q.DEAD_BY_QUEUE).fetchall(),
                        dict(c.execute(self.q.RECENT_FINISHED, (now - window,)).fetchall()),
                        c.execute(self.q.QUEUE_CONTROLS).fetchall(),
                        c.execute(self.q.WAITING_BY_QUEUE).fetchall())

        return stats_from_rows(now, window, *self.b.run(op))
