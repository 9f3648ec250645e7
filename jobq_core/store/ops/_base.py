"""What every operation module reaches: the backend, its dialect and statements, and the
methods one operation mixin calls on another (declared here, defined in the mixin named)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Generic

from ...errors import DatabaseUnavailable
from ...types import Deps, Job, NewJob
from ..backend import Backend
from ..controls import ControlCache
from ..dbapi import C
from ..dialect import Dialect
from ..statements import Statements
from ..rows import job_from_row


class Operations(Generic[C]):
    """``C``: the backend's connection type, what each operation's ``c`` is."""

    backend: Backend[C]
    dialect: Dialect[C]
    statements: Statements  # every shared statement, in the dialect's spelling
    _controls: ControlCache

    if TYPE_CHECKING:
        # Defined by the mixins of ``store.engine.Engine`` (declared only for the type
        # checker: at run time the mixin's own definition is the one found).
        # -- running.py
        def _insert(self, c: C, jobs: Sequence[NewJob], now: float) -> list[int]: ...

        # -- dependencies.py
        def _insert_with_deps(self, c: C, jobs: Sequence[NewJob], deps: Sequence[Deps | None],
                              now: float) -> list[int]: ...

        def _wait_for(self, c: C, job_id: int, targets: list[int], allow_failed: bool,
                      now: float) -> None: ...

        def _link(self, c: C, job_id: int, targets: list[int], allow_failed: bool) -> None: ...

        def _settle(self, c: C, job_id: int, status: str, now: float) -> None: ...

        def _released(self, c: C, queues: set[str]) -> None: ...

        def _sweep_waiting(self, c: C, now: float) -> int: ...

    def _get(self, c: C, job_id: int) -> Job | None:
        row = c.execute(self.statements.JOB, (job_id,)).fetchone()
        return job_from_row(row) if row else None

    def _refuse_if_maybe_committed(self, again: bool) -> None:
        """Adding jobs cannot tell its own rows from another's after a break mid-commit:
        report it rather than risk adding them twice."""
        if again:
            raise DatabaseUnavailable(
                f"{self.backend.where}: the connection broke while jobs were being added; they may "
                "or may not have been added (check before enqueueing them again)")
