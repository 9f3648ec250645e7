"""Enqueue and completion over a cursor, written once: the engine runs them on its own
connections, ``app_connection.py`` (both stores) on an application's, in its transaction.

Each takes ``c`` (anything with ``execute(sql, params)`` returning a DB-API cursor) and a
dialect or its statements (``store.dialect``); none opens, commits or rolls back a
transaction of its own unless it is handed one (``transaction``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol, TypeVar

from ...errors import JobqError
from ...types import JobStatus, NewJob
from ..base import Completion
from ..dbapi import C, Connection
from ..statements import Statements

C_contra = TypeVar("C_contra", bound=Connection, contravariant=True)


class Inserts(Protocol[C_contra]):
    """What enqueue uses of a dialect (``store.dialect.Dialect`` has it; declared here
    because dialect.py imports this module, for ``completed``)."""

    @property
    def statements(self) -> Statements: ...

    def insert_unique(self, c: C_contra, job: NewJob, now: float) -> int | None: ...

    def insert_plain(self, c: C_contra, jobs: Sequence[NewJob], now: float,
                     notify: list[str]) -> list[int]: ...

UNIQUE_TRIES = 5  # a key whose holder keeps finishing between our two statements

Released = Callable[[Any, set[str]], None]
"""``released(c, queues)``: told the queues of the jobs a settling released, inside its
transaction (PostgreSQL sends their NOTIFY there)."""


def _joined(_c: object) -> AbstractContextManager[None]:
    return nullcontext()


# -- enqueue -------------------------------------------------------------------------------

def insert_unique(c: C, d: Inserts[C], job: NewJob, now: float) -> int:
    """A job with a unique key: its id, or the id of the live job that holds the key."""
    for _ in range(UNIQUE_TRIES):
        job_id = d.insert_unique(c, job, now)
        if job_id is not None:
            return job_id
        row = c.execute(d.statements.LIVE_WITH_KEY, (job.unique_key,)).fetchone()
        if row:
            holder: int = row[0]  # jobq_jobs.id
            return holder
        # the holder finished between the two statements: insert again (under REPEATABLE
        # READ the lookup may never see the holder: hence the bound)
    raise JobqError(f"unique key {job.unique_key!r}: another transaction holds it, and this "
                    "one cannot see it (use READ COMMITTED for transactional enqueue)")


def insert_jobs(c: C, d: Inserts[C], jobs: Sequence[NewJob], now: float,
                plain: Callable[[C, Sequence[NewJob], float, list[str]], list[int]] | None = None,
                ) -> list[int]:
    """Inside a transaction: jobs with and without unique keys, their ids in order. A
    unique key held by a live job (or an earlier job of the batch) yields that job's id.
    ``plain``: how a run of jobs without a key goes in (``d.insert_plain`` unless given;
    an application's SQLite connection takes ``d.insert_each``). Waking idle workers is
    the caller's."""
    insert = plain or d.insert_plain
    ids: list[int] = []
    run: list[NewJob] = []
    for job in jobs:
        if job.unique_key is None:
            run.append(job)
            continue
        if run:
            ids += insert(c, run, now, [])
            run = []
        ids.append(insert_unique(c, d, job, now))
    if run:
        ids += insert(c, run, now, [])
    return ids


# -- completion ----------------------------------------------------------------------------

def completed(c: Connection, st: Statements, x: Completion, now: float, again: bool = False,
              params: tuple[object, ...] | None = None) -> bool | None:
    """The fenced completion of one job: ``COMPLETE`` (no job waits on it: one cheap
    statement), and when that changed nothing ``COMPLETE_SETTLING``. None: fenced out;
    else whether jobs wait on it (for the caller to ``settle`` in the same transaction).
    ``again`` (an earlier try may have committed): a completion it finds committed under
    its token counts, its dependents settled by that commit. ``params`` given: COMPLETE
    was tried with them already."""
    if params is None:
        params = (x.result, now, x.job_id, x.token)
        if c.execute(st.COMPLETE, params).rowcount == 1:
            return False
    row = c.execute(st.COMPLETE_SETTLING, params).fetchone()
    if row is not None:
        return bool(row[0])
    if again and c.execute(st.SUCCEEDED_UNDER, (x.job_id, x.token)).fetchone():
        return False
    return None


def complete(c: C, st: Statements, x: Completion, now: float,
             transaction: Callable[[C], AbstractContextManager[object]] = _joined,
             released: Released | None = None) -> bool:
    """``completed``, then the settling of the job's dependents: the first statement
    alone (the common case, no transaction), the rest inside ``transaction(c)`` (the
    engine's write transaction; on an application's connection, the caller's own).
    Whether it was accepted (False: fenced out, nothing written)."""
    params = (x.result, now, x.job_id, x.token)
    if c.execute(st.COMPLETE, params).rowcount == 1:
        return True  # no job waits on it: the hot path
    with transaction(c):
        waits = completed(c, st, x, now, params=params)
        if waits:
            queues = settle(c, st, x.job_id, JobStatus.SUCCEEDED, now)
            if queues and released is not None:
                released(c, queues)
    return waits is not None


def settle(c: Connection, st: Statements, job_id: int, status: str, now: float) -> set[str]:
    """Inside the transaction that ended ``job_id`` with ``status``: release or cancel the
    jobs waiting on it, and (for those cancelled) the jobs waiting on them; the queues of
    the jobs released (see ``ops/dependencies.py`` for the rules).

    Each dependent met by this end has its ``unmet`` decremented: constant work per edge,
    so a group of N members costs N small settlings, not N counts of N edges (each under
    the callback's row lock on PostgreSQL, the write lock on SQLite). Only at 0 are its
    edges counted (``RECOUNT``), once, before it is released."""
    ended = [(job_id, status)]
    queues: set[str] = set()
    while ended:
        parent, how = ended.pop()
        for dependent, allow_failed, queue in c.execute(
                st.WAITING_DEPENDENTS, (parent,)).fetchall():
            if how == JobStatus.SUCCEEDED or allow_failed:
                left = c.execute(st.UNMET_DOWN, (dependent,)).fetchone()
                if left is not None and left[0] <= 0 and release_if_met(c, st, dependent):
                    queues.add(queue)
            else:
                c.execute(st.CANCEL_DEPENDENT, (now, because(parent, how), dependent))
                ended.append((dependent, JobStatus.CANCELLED))
    return queues


def release_if_met(c: Connection, st: Statements, job_id: int) -> bool:
    """A waiting job whose ``unmet`` says none is left: its edges counted; pending when
    none is unmet (True), else waiting with ``unmet`` set to the count."""
    row = c.execute(st.RECOUNT, (job_id,)).fetchone()
    return row is not None and row[0] == 0 and \
        c.execute(st.RELEASE_WAITING, (job_id,)).rowcount == 1


def because(job_id: int, status: str) -> str:
    """A dependent's error when ``job_id`` ended ``status`` (dead or cancelled)."""
    return f"cancelled: dependency {job_id} ended {status}"
