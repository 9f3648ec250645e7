"""The monitor's data source: opens a jobq database read-only and returns snapshots.

No Textual here: the app calls ``poll`` from one background thread at a time and renders
what it returns. Hazards and invariants:

* Reads go through one read-only connection (SQLite ``mode=ro``; a PostgreSQL session
  with ``default_transaction_read_only``), so watching never takes a write lock and never
  creates or migrates anything. Actions (retry, cancel) open a short-lived separate
  connection, do one operation, and close it; ``read_only`` sources refuse them.
* The store's change signal (``Queue.watch``) says when another connection may have
  committed; ``version`` counts those changes. While it stands still (and the view and
  filter are the same), ``poll`` reuses the last read and only re-checks, except every
  ``max_reuse`` seconds, because some counts (scheduled jobs becoming due) move with time
  alone.
* Only what one screen shows is read: every list has a LIMIT and uses a partial index.
  What a view reads is the view's own business (``View.read``, and ``View.read_holds``
  after it): ``poll`` is handed the view, never looks one up, and nothing here depends on
  which view it is.
* A locked, corrupt, replaced or deleted file raises ``Unavailable`` from ``poll``; the
  next ``poll`` tries again (reopening the file if it was replaced), so the app recovers
  when the database comes back.
"""
from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from jobq_core import (
    SYSTEM_CLOCK, Attempt, Clock, Dependencies, InvalidState, Job, JobNotFound, JobqError,
    JobStatus, Queue, Stats, Throughput, Watch, Why, WorkerInfo,
)

from jobq_core.presentation.views.reading import dead_group_ids, leading, shown

from jobq_core.presentation.views.filters import Filter
from jobq_core.presentation.views.snapshot import ROW_LIMIT, Snapshot

if TYPE_CHECKING:
    from jobq_core.presentation.views.base import View

SPARK_BUCKET = 10.0  # seconds per sparkline bucket
SPARK_SPAN = 300.0  # seconds of history in the sparklines
HOUR = 3600.0  # the header's "last hour" counts (wide layout)
HOUR_EVERY = 30.0  # ... are read again at most this often when that read is costly,
HOUR_CHEAP = 0.005  # ... and at every fresh read while it costs less CPU than this
HEALTH_EVERY = 10.0  # seconds between reads of jobq's tables' health (it moves slowly)
READ_BUSY_TIMEOUT = 1.0  # a poll never waits long on a lock: it reports and tries again
WRITE_BUSY_TIMEOUT = 5.0


class SourceError(Exception):
    """The database cannot be opened at all (missing, not SQLite, not jobq)."""


class Unavailable(Exception):
    """The database could not be read this time (locked, gone, replaced by garbage)."""


class ReadOnly(Exception):
    """An action was asked of a read-only source."""


class Source:
    def __init__(self, path: str | os.PathLike[str], *, clock: Clock | None = None,
                 read_only: bool = False, max_reuse: float = 30.0):
        self.path = os.fspath(path)
        self._injected_clock = clock
        # Until the database is open: then the queue's (on PostgreSQL, the server's).
        self.clock: Clock = clock or SYSTEM_CLOCK
        self.read_only = read_only
        self.max_reuse = max_reuse
        self._queue: Queue | None = None
        self._watch: Watch | None = None
        self._changes = 0  # how many changes the watch has reported (see ``version``)
        self._last: Snapshot | None = None
        self._hour: Stats | None = None  # the last read of the last hour's counts
        self._hour_cpu = 0.0  # what that read cost (its thread's CPU)
        self._spark: Throughput | None = None  # one-second buckets at the last read
        self._spark_at = 0.0
        self._health: tuple[str, ...] = ()  # the warnings of the last health read
        self._health_at = -math.inf

    # -- opening --------------------------------------------------------------------------

    def open(self) -> None:
        """Open the database, or raise ``SourceError`` saying plainly what is wrong.
        Never creates anything (the store is opened read-only, with ``create=False``)."""
        try:
            self._reopen()
        except JobqError as e:  # DatabaseError (not jobq's, too new, ...) included
            raise SourceError(_plain_error(e)) from None

    def _reopen(self) -> Queue:
        self.close()
        q = Queue(self.path, clock=self._injected_clock, read_only=True, create=False,
                  busy_timeout=READ_BUSY_TIMEOUT)
        self.clock = q.clock
        try:
            self._watch = q.watch()
        except BaseException:
            q.close()
            raise
        self._queue, self._last, self._hour, self._spark = q, None, None, None
        self._changes += 1
        return q

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        if self._queue is not None:
            try:
                self._queue.close()
            finally:
                self._queue = None

    # -- reading --------------------------------------------------------------------------

    def poll(self, view: View, filt: Filter, *, grouped: bool = True,
             force: bool = False) -> Snapshot:
        """A snapshot for ``view`` (a ``View``: what it reads is its own business); the
        last one again (re-stamped) when nothing changed."""
        with self._reading() as q:
            version = self._version()
            now = self.clock.now()
            last = self._last
            if (not force and last is not None and last.version == version
                    and (last.view, last.filter, last.grouped) == (view.name, filt, grouped)
                    and 0 <= now - last.read_at < self.max_reuse):
                self._last = replace(last, checked_at=now, reused=True)
                return self._last
            snap = self._read(q, version, view, filt, grouped, now, force)
        self._last = snap
        return snap

    @contextmanager
    def _reading(self) -> Iterator[Queue]:
        """The open connection. A jobq error while reading closes it (the next read opens
        it again) and becomes ``Unavailable``."""
        try:
            yield self._current_queue()
        except JobqError as e:
            self.close()
            raise Unavailable(_plain_error(e)) from None

    def _current_queue(self) -> Queue:
        """The open connection, or a new one when the last read failed (the watch reports
        a deleted or replaced file as an error, which closes the connection)."""
        if self._queue is None:
            try:
                return self._reopen()
            except (JobqError, OSError) as e:
                self.close()
                raise Unavailable(_plain_error(e)) from None
        return self._queue

    def _version(self) -> int:
        """A number that changes whenever another connection may have committed."""
        assert self._watch is not None
        if self._watch.wait(0):
            self._changes += 1
        return self._changes

    def _read(self, q: Queue, version: int, v: View, filt: Filter, grouped: bool,
              now: float, force: bool = False) -> Snapshot:
        started, cpu = time.monotonic(), time.thread_time()
        stats = self._stats(q, now, force)
        history = self._history(q, now)
        workers = tuple(q.workers())
        # Unfiltered: the header's expired-lease warning must see every running job.
        running = tuple(q.list("running", limit=ROW_LIMIT, payloads=False))
        last = self._last
        if (v.groups and grouped and not force and last is not None
                and (last.view, last.filter, last.grouped) == (v.name, filt, grouped)
                and 0 <= now - last.rows_at < v.regroup_every):
            # a costly grouping: not every second
            rows, rows_at, holds = last.rows, last.rows_at, last.holds
        else:
            rows, rows_at = v.read(q, filt, grouped), now
            holds = v.read_holds(q, rows)
        return Snapshot(v.name, filt, grouped, version, now, now, time.monotonic() - started,
                        time.thread_time() - cpu, stats, history, shown(workers),
                        shown(running), shown(rows), rows_at, holds=holds, frozen=q.frozen,
                        blockers=tuple(q.write_blockers()), leader=leading(q, now),
                        db_warnings=self._db_warnings(q, now))

    def _db_warnings(self, q: Queue, now: float) -> tuple[str, ...]:
        """What ``Queue.db_health`` warns of, read again every ``HEALTH_EVERY`` seconds."""
        if not 0 <= now - self._health_at < HEALTH_EVERY:
            self._health, self._health_at = tuple(q.db_health().warnings()), now
        return self._health

    def _stats(self, q: Queue, now: float, force: bool) -> Stats:
        """The counts, with the last hour's finished counts read again at every read while
        that costs little, else only every ``HOUR_EVERY`` seconds: counting an hour of
        finished jobs is most of a read during a drain (53 of 70 ms at 5,000 jobs/s), and
        the header's "last hour" needs no more. Between, the counts of the last second
        are read (an index range of a second's jobs) and the hour's from the last full
        read are shown."""
        hour = self._hour
        if (force or hour is None or self._hour_cpu < HOUR_CHEAP
                or not 0 <= now - hour.now < HOUR_EVERY):
            cpu = time.thread_time()
            stats = self._hour = q.stats(window=HOUR)
            self._hour_cpu = time.thread_time() - cpu
            return stats
        return replace(q.stats(window=1.0), window=HOUR,
                       succeeded_recent=hour.succeeded_recent, dead_recent=hour.dead_recent,
                       cancelled_recent=hour.cancelled_recent)

    def _history(self, q: Queue, now: float) -> Throughput:
        """Finished jobs and failed attempts per second over the last ``SPARK_SPAN``
        seconds. A second that was over at the last read cannot change (its jobs finished
        before then), except by a commit still on its way: only the seconds from the one
        before the last read's are counted again. During a drain of 13,000 jobs a second,
        counting 300 s of finished jobs cost 155 ms of CPU, the last few seconds' 5 ms."""
        last, n = self._spark, round(SPARK_SPAN)
        if last is not None and self._spark_at <= now:
            redo = math.floor(self._spark_at) - 1
            tail = q.throughput(span=max(1.0, min(SPARK_SPAN, math.floor(now) + 1 - redo)),
                                bucket=1.0)
            start = round(tail.start) + len(tail.succeeded) - n
            keep = round(tail.start) - start  # seconds of the last read still wanted
            skip = start - round(last.start)
            if skip >= 0 and skip + keep <= len(last.succeeded):
                fresh = Throughput(float(start), 1.0, *(
                    old[skip:skip + keep] + new
                    for old, new in ((last.succeeded, tail.succeeded),
                                     (last.failed, tail.failed), (last.dead, tail.dead))))
                self._spark, self._spark_at = fresh, now
                return fresh
        fresh = self._spark = q.throughput(span=SPARK_SPAN, bucket=1.0)
        self._spark_at = now
        return fresh

    def version(self) -> int:
        """A number that changes whenever another connection may have committed."""
        with self._reading():
            return self._version()

    def detail(self, job_id: int) -> tuple[Job | None, list[Attempt]]:
        """One job and its attempts, read in one go (for the detail screen)."""
        with self._reading() as q:
            job = q.get(job_id)
            return job, (q.attempts(job_id) if job else [])

    def links(self, job_id: int) -> tuple[Dependencies, Why | None]:
        """What the job waits on and what waits on it, and why it is not running (None
        when it is gone), for the detail screen."""
        with self._reading() as q:
            deps = q.dependencies(job_id)
            try:
                return deps, q.why(job_id)
            except JobNotFound:
                return deps, None

    # -- acting (a short-lived write connection each) -------------------------------------

    def _writer(self) -> Queue:
        if self.read_only:
            raise ReadOnly("the monitor was opened with --read-only")
        return Queue(self.path, clock=self._injected_clock, create=False,
                     busy_timeout=WRITE_BUSY_TIMEOUT)

    def retry(self, job_id: int, *, force: bool = False) -> None:
        with self._writer() as q:
            q.retry(job_id, force=force)

    def cancel(self, job_id: int) -> JobStatus:
        """``CANCELLED`` for a pending job; a running one stays ``RUNNING``, asked to stop."""
        with self._writer() as q:
            return q.cancel(job_id)

    def retry_many(self, job_ids: list[int]) -> tuple[int, int]:
        """Retry each job; (how many were retried, how many were not dead or cancelled)."""
        return self._each(job_ids, Queue.retry)

    def cancel_many(self, job_ids: list[int]) -> tuple[int, int]:
        """Cancel each job; (how many were cancelled or asked to stop, how many were done)."""
        return self._each(job_ids, Queue.cancel)

    def _each(self, job_ids: list[int], act) -> tuple[int, int]:
        done = skipped = 0
        with self._writer() as q:
            for job_id in job_ids:
                try:
                    act(q, job_id)
                    done += 1
                except (InvalidState, JobNotFound):
                    skipped += 1
        return done, skipped

    def forget_workers(self, workers: Sequence[WorkerInfo]) -> int:
        """Delete these registry entries (each only if it has not beaten since it was
        read); returns how many."""
        with self._writer() as q:
            return q.forget_workers(workers)

    def pause(self, queue: str, paused: bool) -> None:
        """Pause (True) or resume (False) ``queue`` for every worker."""
        with self._writer() as q:
            if paused:
                q.pause(queue)
            else:
                q.resume(queue)

    def count_dead(self, filt: Filter) -> int:
        """How many dead jobs ``retry_dead`` would retry (queue, kind and error only; with a
        dead group's filter, exactly that group's jobs)."""
        with self._reading() as q:
            if filt.group is not None:
                return len(dead_group_ids(q, filt))
            return q.count("dead", filt.queue, filt.kind, error_contains=filt.error,
                           prefix=filt.prefix, search=filt.words)

    def retry_dead(self, filt: Filter) -> int:
        if filt.group is not None:  # only the group's jobs, not others that start alike
            with self._reading() as q:
                ids = dead_group_ids(q, filt)
            return self.retry_many(ids)[0]
        with self._writer() as q:
            return q.retry_dead(queue=filt.queue, kind=filt.kind, error_contains=filt.error,
                                prefix=filt.prefix, search=filt.words)


def rates(seconds: Throughput, at: float, window: float = 2.0) -> tuple[float, float]:
    """Jobs succeeded and attempts failed per second over the last ``window`` whole
    seconds before ``at`` plus the part of the second ``at`` is in, counted for what it is
    (its jobs over the time it has run), so a rate follows a drain within about two
    seconds. ``seconds``: one-second buckets (``Snapshot.history``); only those in the
    window are read. ``at`` is the time the data is complete up to
    (``Snapshot.checked_at``): nothing was committed between the read and then, so a rate
    falls to zero when work stops, even while the snapshot is reused."""
    start = math.floor(at) - window
    elapsed = at - start
    # the buckets whose start t has start <= t < at
    lo = max(0, math.ceil((start - seconds.start) / seconds.bucket))
    hi = max(lo, math.ceil((at - seconds.start) / seconds.bucket))
    return sum(seconds.succeeded[lo:hi]) / elapsed, sum(seconds.failed[lo:hi]) / elapsed


def spark_buckets(history: Throughput, at: float) -> Throughput:
    """The sparklines' ``SPARK_BUCKET``-second buckets from one-second ones, the last
    ending with the second ``at`` is in and each before it the seconds before that, as far
    back as ``history`` goes. ``at`` is the time the data is complete up to
    (``Snapshot.checked_at``, or earlier): the seconds between the read and then count 0,
    so the buckets slide on while a snapshot is reused, and a drain shows in the last
    bucket at the next draw (buckets aligned to the read would keep it in a filling bucket
    that is not drawn until a new read, up to ``max_reuse`` seconds later)."""
    b, first = round(SPARK_BUCKET), round(history.start)
    end = math.floor(at) + 1
    start = end - (end - first) // b * b

    def fold(counts: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(sum(counts[max(0, t - first):max(0, t + b - first)])
                     for t in range(start, end, b))

    return Throughput(float(start), float(b), fold(history.succeeded), fold(history.failed),
                      fold(history.dead))


def _plain_error(e: BaseException) -> str:
    return str(e) or type(e).__name__


__all__ = ["ReadOnly", "Snapshot", "Source", "SourceError", "Unavailable", "rates",
           "spark_buckets"]
