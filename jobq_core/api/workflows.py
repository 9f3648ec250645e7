"""``Queue``'s verbs for jobs that wait for others: chain, group, and reading the links.

A part of ``Queue`` (one of its bases), kept apart from ``queue.py``: it uses only what it
declares below. The rules these verbs follow are the engine's (``store/ops/dependencies.py``)
and the Workflows guide's.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..clock import Clock
from ..common.checks import check_int
from ..store.base import Store
from ..types import Dependencies, Deps
from .app_connections import unwrap
from .new_jobs import Item, JobMaker


class Workflows:
    store: Store
    clock: Clock
    _jobs: JobMaker

    def chain(self, items: Iterable[Item], *,
              conn: Any = None) -> list[int]:
        """Jobs that run one after the other, each once the previous one succeeded (a job
        that ends dead or cancelled cancels the rest), in one transaction; their ids.
        Items as for ``enqueue_many``; with ``conn``, in the caller's transaction on the
        application's connection (see ``enqueue``)."""
        items = list(items)
        earlier = [None] + [(i,) for i in range(len(items) - 1)]
        return self._insert_linked(items, earlier, conn)

    def group(self, items: Iterable[Item], *,
              then: Item, conn: Any = None) -> tuple[list[int], int]:
        """Jobs that run in parallel, and ``then`` (an item), which runs once every one of
        them succeeded (fan-out, fan-in), in one transaction: (their ids, then's id). Give
        ``then`` ``allow_failed=True`` to run it once they have all ended, however."""
        items = list(items)
        if not items:
            raise ValueError("a group needs at least one job")
        ids = self._insert_linked([*items, then],
                                  [None] * len(items) + [tuple(range(len(items)))], conn)
        return ids[:-1], ids[-1]

    def dependencies(self, job_id: int) -> Dependencies:
        """What the job waits on and what waits on it, each with its status now."""
        return self.store.job_dependencies(job_id)

    def dependency_results(self, job_id: int) -> dict[int, Any]:
        """The results of the jobs ``job_id`` waits on, by id (None for one that has not
        succeeded)."""
        return self.store.job_dependency_results(job_id)

    def _insert_linked(self, items: Sequence[Item], earlier: Sequence[tuple[int, ...] | None],
                       conn: Any) -> list[int]:
        """Items (each may carry ``after`` and ``allow_failed``) inserted in one
        transaction, each also waiting on the earlier items whose positions ``earlier``
        gives."""
        now = self.clock.now()
        waited_on = {position for before in earlier if before for position in before}
        jobs, deps = [], []
        for position, (item, before) in enumerate(zip(items, earlier)):
            after, allow_failed, unique_key = None, False, None
            if isinstance(item, Mapping):
                item = dict(item)
                after = item.pop("after", None)
                allow_failed = item.pop("allow_failed", False)
                unique_key = item.get("unique_key")
            if unique_key is not None and (before or position in waited_on):
                # A held key gives back the holder's id: the links would join an unrelated
                # job to the workflow (made to wait, or even to wait on itself).
                raise ValueError(f"item {position} of a chain or group cannot have a "
                                 "unique_key: while a live job holds the key, that job would "
                                 "be linked in its place; nothing was written")
            jobs.append(self._jobs.from_item(item, now))
            dep = deps_of(after or (), allow_failed, unique_key)
            deps.append(dep._replace(earlier=before) if before else dep)
        if not jobs:
            return []
        if conn is not None:
            return self.store.job_insert_many_on(unwrap(conn), jobs, now, deps)
        return self.store.job_insert_many(jobs, now, deps)


def deps_of(after: Iterable[int], allow_failed: bool, unique_key: str | None) -> Deps:
    """``enqueue``'s ``after`` and ``allow_failed``, checked."""
    ids = tuple(after)
    for job_id in ids:
        check_int("after", job_id, minimum=1)
    if not isinstance(allow_failed, bool):
        raise TypeError(f"allow_failed must be True or False, got {allow_failed!r}")
    if unique_key is not None and ids:
        raise ValueError("a job with after= cannot have a unique_key (which job would wait, "
                         "the new one or the live one holding the key?)")
    return Deps(ids, (), allow_failed)
