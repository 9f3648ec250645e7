"""``Queue``'s verbs for what workers record in the database: the worker registry, the
periodic schedules and the limits declared in code (a part of ``Queue``, one of its bases,
kept apart from ``queue.py``: it uses only what it declares below)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..clock import Clock
from ..common import declared
from ..common.checks import check_name, check_pool, check_term
from ..schedule import Schedule
from ..store.base import Store
from ..types import DEFAULT_BEAT, PoolKind, QueueLimits, QueueStats, ScheduleInfo, WorkerInfo
from .new_jobs import JobMaker


class WorkerRecords:
    store: Store
    clock: Clock
    _jobs: JobMaker

    # -- periodic schedules ---------------------------------------------------------------

    def schedules(self) -> list[ScheduleInfo]:
        """Every schedule the database has seen (workers record them), with its last tick."""
        return self.store.schedule_list()

    def forget_schedule(self, key: str) -> bool:
        """Delete a recorded schedule (``ScheduleInfo.key``) that no worker declares any
        more; whether it existed. A worker that still declares it records it again."""
        check_name("schedule key", key)
        return self.store.schedule_forget(key)

    def register_schedule(self, schedule: Schedule, since: float) -> None:
        """Record ``schedule`` (if new) as counting ticks after ``since``. Workers do this."""
        self.store.schedule_register(schedule.info(since, self.clock.now()))

    def rewind_schedule(self, schedule: Schedule, recorded: float, tick: float) -> bool:
        """Set a schedule's recorded tick back from ``recorded`` (in the future: written by a
        clock that ran ahead) to ``tick``; False when another worker changed it first."""
        return self.store.schedule_rewind(schedule.key, recorded, tick, self.clock.now())

    def enqueue_tick(self, schedule: Schedule, tick: float) -> int | None:
        """Enqueue ``schedule``'s job for ``tick`` (its run_at), recording the tick in the
        same transaction; the job's id, or None when another worker enqueued that tick (or
        a later one) first. The schedule must be registered."""
        job = schedule.tick_job(tick, self._jobs.max_attempts)
        return self.store.schedule_tick(schedule.key, float(tick), job, self.clock.now())

    # -- limits declared in code ----------------------------------------------------------

    def declared_limits(self) -> dict[str, QueueLimits]:
        """The queues' limits as the code declares them (``Registry.queue``), recorded by
        the worker that applied them last; ``QueueStats.declared`` shows them beside
        what the database holds."""
        return declared.declarations(self.store.settings_read())

    def declare_limits(self, limits: Mapping[str, QueueLimits]) -> list[str]:
        """Apply the limits a worker's registry declares (``Registry.queue``), as a worker
        does when it starts: for each queue whose declaration differs from the one
        recorded (or none is), set its limits (``set_limit``) and record the declaration.
        A queue declared as recorded is left alone, whatever its limits: an operator's
        change holds until the code changes. Queues not in ``limits`` are never touched.
        Returns the queues whose limits were set."""
        recorded = self.declared_limits()
        current = self.store.queue_controls()
        applied = []
        for queue, want in limits.items():
            check_name("queue", queue)
            if recorded.get(queue) == want:
                continue
            if current.get(queue, _NONE).limits != want:
                self.store.queue_set_limit(queue, want.concurrency, want.rate, self.clock.now(),
                                           want.key_concurrency, want.ordered)
                applied.append(queue)
            self.store.settings_write({declared.key(queue): declared.encode(want)})
        return applied

    def forget_declared(self, queue: str) -> bool:
        """Delete the recorded declaration of ``queue``'s limits (its code declares none
        any more); whether there was one. Its limits stay as they are."""
        check_name("queue", queue)
        if queue not in self.declared_limits():
            return False
        self.store.settings_write({declared.key(queue): None})
        return True

    # -- workers --------------------------------------------------------------------------

    def register_worker(self, worker_id: str, *, host: str, pid: int,
                        queues: Sequence[str] | None, concurrency: int,
                        beat_interval: float | None = None,
                        lease: float | None = None, pool: PoolKind | str | None = None,
                        ) -> None:
        """Add the worker to the registry. ``beat_interval`` (seconds between its
        ``beat_worker`` calls) is what it is judged late or lost by; ``lease`` its lease
        term, for people to read; ``pool`` the ``PoolKind`` its handlers run in."""
        now = self.clock.now()
        self.store.worker_register(WorkerInfo(
            worker_id, host, pid, None if queues is None else tuple(queues), concurrency, now,
            now, 0, check_term("beat_interval", beat_interval), check_term("lease", lease),
            None if pool is None else check_pool(pool), None if pool is None else ()))

    def beat_worker(self, worker_id: str, *, busy: int = 0,
                    children: Sequence[tuple[int, str, int | None]] | None = None) -> bool:
        """Record that the worker is alive (and, for a process pool, each child's
        ``(pid, state, job id)``); False when it has no registry entry (it was forgotten,
        or never registered): then it should register again."""
        return self.store.worker_beat(worker_id, self.clock.now(), busy,
                                      None if children is None else list(children))

    def deregister_worker(self, worker_id: str) -> None:
        self.store.worker_deregister(worker_id)

    def workers(self, *, forgotten: bool = False) -> list[WorkerInfo]:
        """The registered workers, except (unless ``forgotten``) those silent past their
        forget time (``WorkerInfo.forgotten``), which the reaper deletes."""
        workers, now = self.store.worker_list(), self.clock.now()
        return workers if forgotten else [w for w in workers if not _forgotten(w, now)]

    def forget_workers(self, workers: Iterable[WorkerInfo]) -> int:
        """Delete these registry entries, each only if it has not beaten since it was read
        (a worker that came back stays); returns how many were deleted."""
        seen = [(w.id, w.last_seen) for w in workers]
        return self.store.worker_forget(seen) if seen else 0

    def forget_silent_workers(self) -> int:
        """Delete the entries of workers silent past their forget time (the reaper does
        this); returns how many."""
        return self.forget_workers(w for w in self.workers(forgotten=True)
                                   if _forgotten(w, self.clock.now()))


_NONE = QueueStats()


def _forgotten(w: WorkerInfo, now: float) -> bool:
    try:
        return w.forgotten(now, DEFAULT_BEAT)
    except TypeError:  # a time another program wrote as text: list it, never drop it
        return False
