"""The worker registry, periodic schedules and queue controls, written once for every store."""
from __future__ import annotations

from collections.abc import Sequence

from ...types import NewJob, QueueStats, Rate, ScheduleInfo, WorkerInfo
from ..dbapi import C
from ..rows import controls_from_rows, worker_children
from ._base import Operations


class Registry(Operations[C]):
    # -- queue controls ---------------------------------------------------------------------

    def queue_pause(self, queue: str, paused: bool, now: float) -> None:
        def op(c: C, _again: bool) -> None:
            with self.backend.transaction(c):
                c.execute(self.statements.PAUSE, (queue, bool(paused), now))
                c.execute(self.statements.DROP_UNCONTROLLED, (queue,))
                if not paused and self.backend.notifies:
                    self.backend.notify(c, [queue])  # idle workers look again at once

        self.backend.run(op)
        self._controls.forget()

    def queue_set_limit(self, queue: str, concurrency: int | None, rate: Rate | None,
                        now: float, key_concurrency: int | None = None,
                        ordered: bool = False) -> None:
        def op(c: C, _again: bool) -> None:
            with self.backend.transaction(c):
                c.execute(self.statements.SET_LIMIT, (queue, concurrency, rate and rate.limit,
                                             rate and rate.per, key_concurrency,
                                             bool(ordered), now))
                c.execute(self.statements.DROP_UNCONTROLLED, (queue,))
                self.backend.limits_changed(c)
                if self.backend.notifies:
                    self.backend.notify(c, [queue])

        self.backend.run(op)
        self._controls.forget()

    def queue_controls(self) -> dict[str, QueueStats]:
        return controls_from_rows(self.backend.run(
            lambda c, _again: c.execute(self.statements.QUEUE_CONTROLS).fetchall()))

    # -- schedules --------------------------------------------------------------------------

    def schedule_register(self, schedule: ScheduleInfo) -> None:
        s = schedule
        self.backend.run(lambda c, _again: c.execute(self.statements.SCHEDULE_REGISTER, (
            s.key, s.kind, s.queue, s.every, s.cron, s.tz, s.last_tick, s.updated_at)))

    def schedule_tick(self, key: str, tick: float, job: NewJob, now: float) -> int | None:
        def op(c: C, _again: bool) -> int | None:
            with self.backend.transaction(c):
                if c.execute(self.statements.SCHEDULE_TICK, (tick, now, key, tick)).rowcount != 1:
                    return None  # (after a break: the first try may have committed it)
                [job_id] = self._insert(c, [job], now)
                c.execute(self.statements.SCHEDULE_JOB, (job_id, key))
                return job_id

        return self.backend.run(op)

    def schedule_rewind(self, key: str, recorded: float, tick: float, now: float) -> bool:
        return self.backend.run(lambda c, _again: c.execute(
            self.statements.SCHEDULE_REWIND, (tick, now, key, recorded)).rowcount == 1)

    def schedule_forget(self, key: str) -> bool:
        return self.backend.run(lambda c, _again: c.execute(
            self.statements.SCHEDULE_FORGET, (key,)).rowcount == 1)

    def schedule_list(self) -> list[ScheduleInfo]:
        rows = self.backend.run(lambda c, _again: c.execute(self.statements.SCHEDULES).fetchall())
        return [ScheduleInfo(*r) for r in rows]

    # -- workers ----------------------------------------------------------------------------

    def worker_register(self, info: WorkerInfo) -> None:
        queues = None if info.queues is None else self.dialect.list_param(info.queues)
        children = None if info.children is None else self.dialect.json_param(list(info.children))
        self.backend.run(lambda c, _again: c.execute(self.statements.WORKER_REGISTER, (
            info.id, info.host, info.pid, queues, info.concurrency, info.started_at,
            info.last_seen, info.busy, info.beat_interval, info.lease, info.pool, children)))

    def worker_beat(self, worker_id: str, now: float, busy: int,
                    children: Sequence[tuple[int, str, int | None]] | None = None) -> bool:
        if children is None:
            return self.backend.run(lambda c, _again: c.execute(
                self.statements.WORKER_BEAT, (now, busy, worker_id)).rowcount > 0)
        value = self.dialect.json_param(list(children))
        return self.backend.run(lambda c, _again: c.execute(
            self.statements.WORKER_BEAT_CHILDREN, (now, busy, value, worker_id)).rowcount > 0)

    def worker_deregister(self, worker_id: str) -> None:
        self.backend.run(lambda c, _again: c.execute(self.statements.WORKER_DEREGISTER, (worker_id,)))

    def worker_forget(self, seen: Sequence[tuple[str, float]]) -> int:
        def op(c: C, _again: bool) -> int:
            with self.backend.transaction(c):
                return sum(c.execute(self.statements.WORKER_FORGET, item).rowcount for item in seen)

        return self.backend.run(op) if seen else 0

    def worker_list(self) -> list[WorkerInfo]:
        rows = self.backend.run(lambda c, _again: c.execute(self.statements.WORKERS).fetchall())
        return [WorkerInfo(r[0], r[1], r[2], _queues(self.dialect.read_list(r[3]), r[3]), r[4], r[5],
                           r[6], r[7], r[8], r[9], r[10], worker_children(self.dialect.read_json(r[11])))
                for r in rows]


def _queues(value: object, raw: object) -> tuple[str, ...] | None:
    """A registry entry's queue names; anything else (another program wrote it) is shown as
    the one raw string it is."""
    if value is None:
        return None
    if isinstance(value, list) and all(isinstance(q, str) for q in value):
        return tuple(value)
    return (f"{raw!r:.60} (not a list of queue names)",)
