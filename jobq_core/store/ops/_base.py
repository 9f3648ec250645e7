"""What every operation module reaches: the backend, its dialect and statements."""
from __future__ import annotations

from ...errors import DatabaseUnavailable
from ...types import Job
from ..backend import Backend
from ..controls import ControlCache
from ..dialect import Dialect
from ..statements import Statements
from ..rows import job_from_row


class Operations:
    backend: Backend
    dialect: Dialect
    statements: Statements  # every shared statement, in the dialect's spelling
    _controls: ControlCache

    def _get(self, c, job_id: int) -> Job | None:
        row = c.execute(self.statements.JOB, (job_id,)).fetchone()
        return job_from_row(row) if row else None

    def _refuse_if_maybe_committed(self, again: bool) -> None:
        """Adding jobs cannot tell its own rows from another's after a break mid-commit:
        report it rather than risk adding them twice."""
        if again:
            raise DatabaseUnavailable(
                f"{self.backend.where}: the connection broke while jobs were being added; they may "
                "or may not have been added (check before enqueueing them again)")
