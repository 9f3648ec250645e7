"""Job dependencies, written once for every store: a job enqueued ``after`` others waits
(status ``waiting``, outside the pending indexes) until they end, and the end of a job
settles its waiting dependents in the same transaction.

The rules (see also ``store.base``'s Dependencies rule):

* a dependent becomes ``pending`` when every job it waits on has succeeded (with
  ``allow_failed``: has ended, however);
* a dependency that ends ``dead`` or ``cancelled`` cancels its dependents that do not
  allow it, each with an error naming it, and their dependents in turn;
* a dependency that fails and will be retried leaves them waiting; one revived by an
  operator (``retry``) that then succeeds releases those still waiting (those cancelled
  meanwhile stay cancelled, unless retried too);
* a cancelled dependent retried by an operator waits again (``waiting``) while any of its
  dependencies is not met, a dead or cancelled one included: it runs once that one is
  retried and succeeds, is cancelled again if that one ends dead or cancelled again, and
  otherwise waits (the reaper's sweep leaves it; ``why`` names the dependency).

A waiting job keeps ``unmet``, how many of its dependencies are not met yet: counted when
it starts waiting (``TO_WAITING``), decremented as each one is met (``settle``), counted
over its edges again at 0 before it is released (``release_if_met``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from ...errors import JobNotFound
from ...types import Dependencies, Deps, JobStatus, Link, NewJob
from ..dbapi import C, Row
from ..rows import STATUS_BY_NAME, decode
from ._base import Operations
from .writes import because, insert_jobs, settle

_ENDED = (JobStatus.SUCCEEDED, JobStatus.DEAD, JobStatus.CANCELLED)
SWEEP = 500  # stranded waiting jobs settled per reaper pass


class Dependents(Operations[C]):
    def _insert_with_deps(self, c: C, jobs: Sequence[NewJob], deps: Sequence[Deps | None],
                          now: float, wake: Callable[[Any, set[str]], None] | None = None
                          ) -> list[int]:
        """Inside a transaction: each job, then what it waits on; then the wake-up of their
        queues (``wake``: on an application's connection, its ``app.notify``)."""
        ids: list[int] = []
        for job, dep in zip(jobs, deps):
            [job_id] = insert_jobs(c, self.dialect, [job], now)
            ids.append(job_id)
            if dep is not None and (dep.ids or dep.earlier):
                targets = list(dict.fromkeys([*dep.ids, *(ids[i] for i in dep.earlier)]))
                self._wait_for(c, job_id, targets, dep.allow_failed, now)
        if wake is None:
            self._released(c, {job.queue for job in jobs})
        else:
            wake(c, {job.queue for job in jobs})
        return ids

    def _refuse_missing_targets(self, c: C, deps: Sequence[Deps | None]) -> None:
        """``JobNotFound`` for the first job ``deps`` name that does not exist (reads only)."""
        targets = list(dict.fromkeys(t for dep in deps if dep is not None for t in dep.ids))
        if targets:
            found = {r[0] for r in c.execute(self.statements.DEP_TARGETS,
                                             (self.dialect.list_param(targets),)).fetchall()}
            for target in targets:
                if target not in found:
                    raise JobNotFound(target)

    def _wait_for(self, c: C, job_id: int, targets: list[int], allow_failed: bool,
                  now: float) -> None:
        """Make the new job ``job_id`` wait for ``targets``: waiting, pending (they have all
        ended well already) or cancelled (one ended badly)."""
        ids = self.dialect.list_param(targets)
        # id -> status
        found: dict[int, str] = dict(c.execute(self.statements.DEP_TARGETS, (ids,)).fetchall())
        for target in targets:
            if target not in found:
                raise JobNotFound(target)
        self._link(c, job_id, targets, allow_failed)
        failed = [t for t in targets if found[t] in (JobStatus.DEAD, JobStatus.CANCELLED)]
        if failed and not allow_failed:
            c.execute(self.statements.CANCEL_DEPENDENT, (now, because(failed[0], found[failed[0]]),
                                                job_id))
        elif any(found[t] not in (_ENDED if allow_failed else (JobStatus.SUCCEEDED,))
                 for t in targets):
            c.execute(self.statements.TO_WAITING, (job_id,))

    def _link(self, c: C, job_id: int, targets: list[int], allow_failed: bool) -> None:
        """The edges from ``job_id`` to ``targets`` (distinct jobs that exist), each target
        flagged as waited on."""
        self.dialect.execute_many(c, self.statements.DEP_INSERT, [(job_id, t, bool(allow_failed))
                                                    for t in targets])
        c.execute(self.statements.MARK_DEPENDED_ON, (self.dialect.list_param(targets),))

    def _settle(self, c: C, job_id: int, status: str, now: float) -> None:
        """Inside the transaction that ended ``job_id`` with ``status``: see ``settle``."""
        released = settle(c, self.statements, job_id, status, now)
        if released:
            self._released(c, released)

    def _released(self, c: C, queues: set[str]) -> None:
        """Inside a write transaction: wake the idle workers of ``queues`` when it commits."""
        if self.backend.notifies:
            self.backend.notify(c, queues)

    def _sweep_waiting(self, c: C, now: float) -> int:
        """Release waiting jobs whose dependencies are all met (see STRANDED_WAITING); how
        many. It never cancels: a job waiting on a dead or cancelled dependency was put
        back to wait by an operator (``retry``), and waits for that dependency's retry."""
        stranded = [r[0] for r in c.execute(self.statements.STRANDED_WAITING, (SWEEP,)).fetchall()]
        if not stranded:
            return 0
        released: set[str] = set()
        with self.backend.transaction(c):
            for job_id in stranded:
                if c.execute(self.statements.RELEASE_WAITING, (job_id,)).rowcount == 1:
                    state = c.execute(self.statements.JOB_STATE, (job_id,)).fetchone()
                    assert state is not None  # released just now, in this transaction
                    released.add(state[1])
            if released and self.backend.notifies:
                self.backend.notify(c, released)
        return len(stranded)

    def job_dependencies(self, job_id: int) -> Dependencies:
        def op(c: C, _again: bool) -> tuple[list[Row], list[Row]]:
            with self.backend.snapshot(c):
                return (c.execute(self.statements.WAITS_ON, (job_id,)).fetchall(),
                        c.execute(self.statements.WAITED_BY, (job_id,)).fetchall())

        waits_on, waited_by = self.backend.run(op)
        return Dependencies(tuple(_link(r) for r in waits_on), tuple(_link(r) for r in waited_by))

    def job_dependency_results(self, job_id: int) -> dict[int, object]:
        rows = self.backend.run(lambda c, _again: c.execute(
            self.statements.DEPENDENCY_RESULTS, (job_id,)).fetchall())
        return {dep: decode(result) if status == JobStatus.SUCCEEDED else None
                for dep, status, result in rows}


def _link(row: Row) -> Link:
    job_id, kind, status, allow_failed = row
    # The cast is narrower than the value, on purpose: a status jobq does not know (another
    # program wrote it) stays its raw text, as in Job's reader (rows._CONVERT), while
    # Link.status, like Job.status, is declared JobStatus only (a StrEnum: both read as str).
    return Link(job_id, kind, cast(JobStatus, STATUS_BY_NAME.get(status, status)),
                bool(allow_failed))
