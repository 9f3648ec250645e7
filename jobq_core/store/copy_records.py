"""The records of a copy between stores, as the store contract passes them: what a source
gives (``CopyPage``), what a destination takes (``CopiedJob``, ``CopyMark``) and what it
says when a copy begins (``CopyStart``). The policy that uses them is
``jobq_core/api/copying.py``; the operations, ``store/ops/copying.py``."""
from __future__ import annotations

from typing import NamedTuple

from ..types import Deps, Job, NewJob


class CopiedJob(NamedTuple):
    """A job read from another store, to be added here as it was (its new id is this
    store's): ``job`` as an enqueue would give it, and the state it carries. ``status``:
    pending or waiting (a live job: it arrives pending, then waits if ``deps`` says so), or
    dead, succeeded or cancelled (as it ended)."""

    job: NewJob
    status: str
    attempts: int
    error: str | None
    created_at: float
    finished_at: float | None
    result: str | None = None  # JSON text, of a succeeded job
    deps: Deps | None = None  # what it waits (or waited) on, in this store's ids
    schedules: tuple[str, ...] = ()  # keys of the schedules whose latest tick enqueued it


class CopyPage(NamedTuple):
    """A page of a source's jobs for a copy (``Store.job_copy_out``), read in one snapshot."""

    jobs: list[Job]  # in id order
    depended_on: frozenset[int]  # the ids of those that jobs wait (or waited) on
    waits_on: dict[int, list[tuple[int, bool]]]  # job id -> [(id it waits on, allow_failed)]


class CopyMark(NamedTuple):
    """A copy's record in the destination's ``jobq_meta`` (its key, and its text as the
    copier last wrote it), moved to ``new`` in the transaction of the page it covers."""

    key: str
    old: str
    new: str


class CopyStart(NamedTuple):
    """What ``Store.copy_begin`` found: a record already under the key (then it wrote
    nothing), or None and what it wrote."""

    existing: str | None
    queues: tuple[str, ...] = ()  # the queues whose controls it added
    schedules: tuple[str, ...] = ()  # the keys of the schedules it added
