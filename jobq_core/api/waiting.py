"""Waiting for a job to finish: ``Queue.wait`` (``wait_for_job``) and ``AsyncQueue.wait``
(``await_job``), which return the job once it is succeeded, dead or cancelled.

One thread per queue (``jobq-wait``), started by the first wait and ended ``LINGER``
seconds after the last, sleeps on the store's signal for ended jobs
(``Store.watch_ends``: on PostgreSQL a LISTEN connection, told which jobs each statement
that ended some ended; on SQLite the file watch, which sees every commit) and reads the
awaited jobs that may have ended. It also reads every awaited job each ``LOOK_EVERY``
seconds, so a signal lost (a broken LISTEN connection, an end no statement announced)
costs at most that.

A waiter registers before it reads the job, so an end that commits between the two is
never missed: either the read sees it, or the signal comes after the registration.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Protocol

from ..common.checks import check_int, check_seconds
from ..errors import JobNotFound, JobqError
from ..store.base import FINISHED_STATUSES, EndWatch, Store
from ..types import Job

log = logging.getLogger("jobq.wait")

LINGER = 5.0  # seconds the thread (and its LISTEN connection) outlive the last waiter
LOOK_EVERY = 1.0  # seconds between reads of every awaited job, whatever the signal says

Done = Callable[[Job | JobqError | None], None]
"""Told the ended job (None: it was deleted meanwhile; an error: the queue was closed),
from the waiting thread or the one closing the queue."""


class Queue(Protocol):
    """What waiting uses of a ``Queue``."""

    @property
    def store(self) -> Store: ...


class Waiting:
    """``Queue``'s ``wait`` (a part of ``Queue``, one of its bases: it uses only what it
    declares here)."""

    store: Store

    def wait(self, job_id: int, timeout: float | None = None) -> Job:
        """The job once it has finished (succeeded, dead or cancelled, with its ``result``
        or ``error``). Raises ``TimeoutError`` when it has not within ``timeout`` seconds
        (None: no limit; 0: look once), ``JobNotFound`` for an unknown id."""
        return wait_for_job(self, job_id, timeout)


def wait_for_job(queue: Queue, job_id: int, timeout: float | None = None) -> Job:
    """``queue``'s job ``job_id`` once it has finished (succeeded, dead or cancelled).
    Raises ``TimeoutError`` when it has not after ``timeout`` seconds (None: no limit;
    0: look once), ``JobNotFound`` for an id no job has."""
    _check(job_id, timeout)
    ended = threading.Event()
    got: list[Job | JobqError | None] = []

    def done(job: Job | JobqError | None) -> None:
        got.append(job)
        ended.set()

    hub = _hub(queue)
    hub.add(job_id, done)
    try:
        job = _read(queue.store, job_id)
        if job.status in FINISHED_STATUSES:
            return job
        if ended.wait(timeout):
            return _found(got[0], job_id)
        return _late(queue.store, job_id, timeout)
    finally:
        hub.discard(job_id, done)


async def await_job(queue: Queue, job_id: int, timeout: float | None = None) -> Job:
    """``wait_for_job`` for a coroutine: the event loop is never blocked (the reads run in
    the loop's default executor, the waiting thread resolves a future)."""
    _check(job_id, timeout)
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Job | JobqError | None] = loop.create_future()

    def done(job: Job | JobqError | None) -> None:
        try:
            loop.call_soon_threadsafe(_resolve, future, job)
        except RuntimeError:  # the loop was closed: nobody waits any more
            pass

    hub = _hub(queue)
    await asyncio.to_thread(hub.add, job_id, done)  # may open a LISTEN connection
    try:
        job = await asyncio.to_thread(_read, queue.store, job_id)
        if job.status in FINISHED_STATUSES:
            return job
        try:
            return _found(await asyncio.wait_for(future, timeout), job_id)
        except TimeoutError:
            pass
        return await asyncio.to_thread(_late, queue.store, job_id, timeout)
    finally:
        hub.discard(job_id, done)


def _check(job_id: int, timeout: float | None) -> None:
    check_int("job id", job_id)
    if timeout is not None:
        check_seconds("timeout", timeout)


def _resolve(future: asyncio.Future[Job | JobqError | None], job: Job | JobqError | None,
             ) -> None:
    if not future.done():
        future.set_result(job)


def _read(store: Store, job_id: int) -> Job:
    job = store.job_get(job_id)
    if job is None:
        raise JobNotFound(job_id)
    return job


def _found(job: Job | JobqError | None, job_id: int) -> Job:
    if job is None:
        raise JobNotFound(job_id)  # deleted (pruned) while it was awaited
    if isinstance(job, JobqError):
        raise job
    return job


def _late(store: Store, job_id: int, timeout: float | None) -> Job:
    """After the timeout: one last read (an end that raced the timer counts), else
    ``TimeoutError`` saying what the job is doing."""
    job = _read(store, job_id)
    if job.status in FINISHED_STATUSES:
        return job
    raise TimeoutError(f"job {job_id} did not finish within {timeout:g}s (it is {job.status})")


class _Hub:
    """The waiters of one queue and the thread that tells them (see the module)."""

    def __init__(self, store: Store):
        self._store = store
        self._lock = threading.Lock()
        self._waiters: dict[int, list[Done]] = {}
        self._watch: EndWatch | None = None
        self._running = False
        self._closed = False

    def add(self, job_id: int, done: Done) -> None:
        """Register ``done`` for ``job_id``; once this returns, the signal of its end
        reaches the thread (the watch is open)."""
        with self._lock:
            if self._closed:
                raise JobqError("this queue was closed: open another to wait for jobs")
            self._waiters.setdefault(job_id, []).append(done)
            if not self._running:
                self._watch = self._store.watch_ends()
                self._running = True
                threading.Thread(target=self._loop, args=(self._watch,), name="jobq-wait",
                                 daemon=True).start()

    def discard(self, job_id: int, done: Done) -> None:
        with self._lock:
            waiters = self._waiters.get(job_id)
            if waiters is not None and done in waiters:
                waiters.remove(done)
                if not waiters:
                    del self._waiters[job_id]

    def close(self) -> None:
        """The queue is closing: end the thread (and its LISTEN connection) now; the waits
        under way raise ``JobqError``."""
        with self._lock:
            self._closed = True
            watch = self._watch
            waiting, self._waiters = self._waiters, {}
        if watch is not None:
            watch.wake()
        for job_id, waiters in waiting.items():
            for done in waiters:
                done(JobqError(f"the queue was closed while waiting for job {job_id}"))

    def _loop(self, watch: EndWatch) -> None:
        looked = time.monotonic()
        idle_since: float | None = None
        failing = False
        while True:
            with self._lock:
                now = time.monotonic()
                if self._waiters and not self._closed:
                    idle_since = None
                elif idle_since is None:
                    idle_since = now
                if self._closed or (idle_since is not None and now - idle_since >= LINGER):
                    self._running, self._watch = False, None
                    break
            names: frozenset[int] | None = None
            try:
                if watch.wait(LOOK_EVERY):
                    names = watch.ended()
                elif time.monotonic() - looked < LOOK_EVERY:
                    continue
                failing = False
            except JobqError as e:
                if not failing:  # once an outage: the waiters' own reads report it
                    log.warning("waiting for jobs to end: %s", e)
                failing = True
                time.sleep(0.1)
            if names is None:
                looked = time.monotonic()
            self._look(names)
        watch.close()

    def _look(self, names: frozenset[int] | None) -> None:
        """Read the awaited jobs among ``names`` (None: every one); tell the waiters of
        those that ended."""
        with self._lock:
            ids = list(self._waiters) if names is None else [i for i in names
                                                                if i in self._waiters]
        if len(ids) > 1:  # one read says which ended (SQLite: every commit wakes a look)
            try:
                statuses = self._store.job_statuses(ids)
            except JobqError as e:
                log.warning("reading %d awaited jobs failed: %s", len(ids), e)
                return
            ids = [i for i in ids if i not in statuses  # deleted: its waiters are told
                   or statuses[i] in FINISHED_STATUSES]
        for job_id in ids:
            try:
                job = self._store.job_get(job_id)
            except JobqError as e:
                log.warning("reading job %d for its waiters failed: %s", job_id, e)
                return
            if job is not None and job.status not in FINISHED_STATUSES:
                continue
            with self._lock:
                waiters = self._waiters.pop(job_id, [])
            for done in waiters:
                done(job)


_hubs: weakref.WeakKeyDictionary[Queue, _Hub] = weakref.WeakKeyDictionary()
_hubs_lock = threading.Lock()


def stop_waiting(queue: Queue) -> None:
    """``queue`` is closing: its waiting thread ends (``Queue.close`` calls this)."""
    with _hubs_lock:
        hub = _hubs.pop(queue, None)
    if hub is not None:
        hub.close()


def _hub(queue: Queue) -> _Hub:
    with _hubs_lock:
        hub = _hubs.get(queue)
        if hub is None:
            hub = _hubs[queue] = _Hub(queue.store)
        return hub
