"""The storage contract: job operations, not "run this SQL".

A backend (SQLite now, PostgreSQL later) implements ``Store``; ``Queue`` validates input,
reads the clock and calls these. Every method that takes ``now`` uses it as the current
time: stores never read a clock themselves, so tests control time completely.

Fencing is the store's duty: every operation that takes a ``token`` changes the job only
while it is ``running`` under that same token, and reports a mismatch instead of writing.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from ..types import Attempt, ErrorGroup, ExtendResult, Job, Stats, Throughput, WorkerInfo

RetryDelay = Callable[[int], float]
"""Seconds to wait before the next attempt, given the number of the attempt that failed."""


class NewJob(NamedTuple):
    """A validated job ready to insert; payload is already JSON text. (A tuple: enqueue
    builds one per job, and a tuple is several times cheaper to build than a dataclass.)"""

    kind: str
    payload: str
    queue: str
    priority: int
    run_at: float
    max_attempts: int
    unique_key: str | None


class Completion(NamedTuple):
    job_id: int
    token: int
    result: str | None  # JSON text


@dataclass(frozen=True, slots=True)
class ListFilter:
    status: str | None = None
    queue: str | None = None
    kind: str | None = None
    worker: str | None = None
    error_contains: str | None = None
    limit: int = 100
    offset: int = 0
    payloads: bool = True  # False: leave payload and result unread (None), for listings


class Watch(Protocol):
    """"Something may have changed; wait until it might have": how an idle worker sleeps
    until new work can exist, and how the monitor knows when to read again.

    A store with a push signal (SQLite: inotify on its files; PostgreSQL: LISTEN) wakes a
    waiter within milliseconds; one without polls a cheap version number behind the same
    interface. Writes made through the watched store's own connection need not count.
    """

    def wait(self, timeout: float) -> bool:
        """True as soon as another connection may have committed since the previous
        ``wait`` returned (or since the watch was made), or ``wake()`` was called; False
        when ``timeout`` seconds pass with neither. ``wait(0)`` only checks. A True may be
        spurious; a commit is never missed. Raises ``DatabaseUnavailable`` when the database
        is gone (e.g. its file was deleted or replaced)."""
        ...

    def wake(self) -> None:
        """Make a ``wait`` in another thread return True now. Safe from a signal handler."""
        ...

    def close(self) -> None: ...


class Store(Protocol):
    def job_insert_many(self, jobs: Sequence[NewJob], now: float) -> list[int]:
        """Insert in one transaction; a job whose unique_key is held by a pending or running
        job (or an earlier item of the batch) yields that job's id instead."""
        ...

    def job_claim(
        self, worker: str, queues: Sequence[str] | None, now: float, lease_until: float, limit: int
    ) -> list[Job]:
        """Atomically move up to ``limit`` ready jobs to running under fresh tokens."""
        ...

    def job_extend_many(
        self, leases: Iterable[tuple[int, int]], now: float, lease_until: float
    ) -> ExtendResult: ...

    def job_complete_and_claim(
        self, completions: Sequence[Completion], now: float, worker: str,
        queues: Sequence[str] | None, lease_until: float, limit: int,
    ) -> tuple[list[bool], list[Job]]:
        """``job_complete_many`` then ``job_claim``, in one transaction."""
        ...

    def job_complete_many(self, completions: Sequence[Completion], now: float) -> list[bool]:
        """One transaction; per item, whether it was accepted (False: fenced out)."""
        ...

    def job_fail(
        self, job_id: int, token: int, error: str, now: float, retry_delay: RetryDelay
    ) -> Job | None:
        """Record the failed attempt; back to pending after ``retry_delay`` or dead when out
        of attempts (cancelled when cancellation was requested). None: fenced out."""
        ...

    def job_give_up(self, job_id: int, token: int, error: str, now: float) -> Job | None:
        """Record the failed attempt and end the job dead now, whatever attempts remain
        (cancelled when cancellation was requested). None: fenced out."""
        ...

    def job_release(self, job_id: int, token: int, now: float) -> bool:
        """Give an unfinished job back, runnable now; the attempt is not counted."""
        ...

    def job_progress(
        self, job_id: int, token: int, fraction: float | None, message: str | None
    ) -> bool: ...

    def job_reap_expired(self, now: float, retry_delay: RetryDelay) -> int:
        """Reap: running jobs whose lease ran out go back to pending or to dead."""
        ...

    def job_get(self, job_id: int) -> Job | None: ...

    def job_list(self, where: ListFilter, now: float) -> list[Job]: ...

    def job_attempts(self, job_id: int) -> list[Attempt]: ...

    def job_retry(self, job_id: int, now: float) -> None:
        """A dead or cancelled job back to pending, runnable now, with a fresh allowance."""
        ...

    def job_retry_dead(self, where: ListFilter, now: float) -> int:
        """Every dead job matching ``where`` back to pending; returns how many."""
        ...

    def job_cancel(self, job_id: int, now: float) -> str:
        """Pending: cancelled now. Running: flagged for its worker. Returns the new status."""
        ...

    def job_prune(self, finished_before: float) -> int: ...

    def job_count(self, where: ListFilter, now: float) -> int:
        """How many jobs ``job_list`` would return without limit and offset."""
        ...

    def job_throughput(self, start: float, bucket: float, buckets: int) -> Throughput:
        """Per-bucket finished jobs and failed attempts from ``start`` on (index range scans)."""
        ...

    def job_dead_groups(self, where: ListFilter) -> list[ErrorGroup]:
        """Dead jobs matching ``where`` grouped by kind and error line (see ErrorGroup),
        largest group first, at most ``where.limit`` groups."""
        ...

    def stats(self, now: float, window: float) -> Stats: ...

    def worker_register(self, info: WorkerInfo) -> None: ...

    def worker_beat(self, worker_id: str, now: float, busy: int) -> None: ...

    def worker_deregister(self, worker_id: str) -> None: ...

    def worker_list(self) -> list[WorkerInfo]: ...

    frozen: bool
    """True when the store can only show a fixed copy of the data: it will never change."""

    def describe(self) -> dict[str, str | None]:
        """What the store runs on, for reports: at least ``{"store": <backend name>}``."""
        ...

    def watch(self) -> Watch:
        """A new change signal for this store (see ``Watch``); the caller closes it."""
        ...

    def close(self) -> None: ...
