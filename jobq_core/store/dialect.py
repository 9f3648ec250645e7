"""What a dialect provides: the SQL that differs between databases, and nothing else.

The engine (``store/ops/``) runs every job operation through a ``Backend`` (transactions,
errors, connections) and a ``Dialect``. A dialect is:

* ``PLACEHOLDER`` and the ``FRAGMENTS`` the shared statements of ``store/sql.py`` leave
  open (see that module); ``Statements`` builds every shared statement in this dialect's
  spelling once, when the dialect is made;
* ``MATCHING``: the string tests of a listing's filters;
* ``claim``, the one operation every dialect writes;
* working default loops for the rest, which a dialect overrides only to be faster (and
  says by how much): ``insert_plain`` (a bulk insert), ``insert_unique``,
  ``complete_many``, ``extend_many``, each in one ``batch``; ``prune_deletes`` (the tables
  a pruned job leaves rows in);
* the database's own upkeep: ``health`` (what ``Store.db_health`` reads) and ``tidy``;
* how a list and a JSON value travel as one parameter, and come back
  (``list_param``, ``json_param``, ``read_list``, ``read_json``).

A dialect's method runs on a connection the backend handed the engine, inside or outside a
transaction the engine opened (a dialect may open its own, joining one that is open).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Generic, TypeVar

from ..common.db_health import DbHealth
from ..types import NewJob
from . import listing
from .base import Completion
from .controls import Controls
from .dbapi import Connection, Row
from .ops.writes import completed
from .statements import Statements

C_contra = TypeVar("C_contra", bound=Connection, contravariant=True)
"""The connections a dialect's methods take (only as arguments: a dialect that takes any
``Connection`` serves every backend)."""


class Dialect(Generic[C_contra]):
    PLACEHOLDER = "?"
    FRAGMENTS: Mapping[str, str] = {}
    MATCHING: type[listing.Matching] = listing.Matching
    newest_schema = 0  # the schema version the backend creates and migrates to
    completes_in_claim = False
    """Whether ``complete_and_claim`` is worth a try: a database behind a server, where
    each statement costs a round trip."""

    def __init__(self) -> None:
        self.statements = Statements(self.native, self.FRAGMENTS)

    def native(self, text: str) -> str:
        """``text`` with this dialect's placeholder for ``?`` (jobq's SQL holds no ``?``
        inside a string literal)."""
        return text if self.PLACEHOLDER == "?" else text.replace("?", self.PLACEHOLDER)

    # -- values that travel as one parameter ----------------------------------------------

    def list_param(self, values: Sequence[object]) -> object:
        raise NotImplementedError

    def json_param(self, value: object) -> object:
        raise NotImplementedError

    def read_list(self, value: object) -> object:
        """A list column (a worker's queues, a group's queues) as stored, to a Python list
        (anything else is returned as it is, for the caller to judge)."""
        raise NotImplementedError

    def read_json(self, value: object) -> object:
        raise NotImplementedError

    def ended(self, c: C_contra, job_ids: Sequence[int]) -> None:
        """Inside the transaction that ended ``job_ids`` (dead or cancelled; completions
        tell in their own statements): tell the waiters of ``Queue.wait`` when it commits.
        Nothing by default (SQLite's watch sees every commit)."""

    # -- operations whose statements differ -----------------------------------------------

    def claim(self, c: C_contra, worker: str, queues: list[str], now: float,
              lease_until: float, limit: int, attempt_limits: Mapping[str, int] | None,
              controls: Controls) -> tuple[list[Row], bool]:
        """Run the claim statement: (rows of ``rows.CLAIM_FIELDS``, in any order; whether
        it was the plain claim on every queue, for ``ControlCache.claimed``). See
        ``Store.job_claim`` for what it must guarantee and ``controls`` for its shapes."""
        raise NotImplementedError

    def batch(self, c: C_contra) -> AbstractContextManager[object]:
        """What the default loops below run in: one write transaction for the lot where a
        commit each costs more (SQLite: ``BEGIN IMMEDIATE``, joining one that is open). By
        default none: each statement commits on its own."""
        return nullcontext()

    def insert_row(self, c: C_contra, statement: str, job: NewJob, now: float) -> Row | None:
        """One job's ``INSERT ... RETURNING id`` (``INSERT_RETURNING`` or
        ``INSERT_UNIQUE``): its row, None when a live job holds its unique key."""
        return c.execute(statement, (*job, now)).fetchone()

    def insert_each(self, c: C_contra, jobs: Sequence[NewJob], now: float,
                    notify: list[str]) -> list[int]:
        """Jobs without a unique key, one ``insert_row`` each, in the caller's transaction:
        what an application's transaction takes (no read before its first write)."""
        ids: list[int] = []
        for job in jobs:
            row = self.insert_row(c, self.statements.INSERT_RETURNING, job, now)
            assert row is not None, "INSERT_RETURNING has no ON CONFLICT: it returns its row"
            ids.append(row[0])
        return ids

    def insert_plain(self, c: C_contra, jobs: Sequence[NewJob], now: float,
                     notify: list[str]) -> list[int]:
        """Insert jobs without a unique key; their ids, in order. ``notify``: the queues to
        wake when the insert commits, for a dialect that sends the signal in its own
        statement (the default sends nothing: a backend that ``notifies`` needs this
        overridden). By default ``insert_each`` in a ``batch``."""
        if not jobs:
            return []
        with self.batch(c):
            return self.insert_each(c, jobs, now, notify)

    def insert_unique(self, c: C_contra, job: NewJob, now: float) -> int | None:
        """Insert a job with a unique key: its id, or None when a live job holds the key."""
        row = self.insert_row(c, self.statements.INSERT_UNIQUE, job, now)
        if row is None:
            return None
        job_id: int = row[0]
        return job_id

    def complete_many(self, c: C_contra, completions: Sequence[Completion], now: float,
                      again: bool) -> dict[int, bool]:
        """The fenced completions (``ops.writes.completed`` each, in a ``batch``): the ids
        accepted, each with whether jobs wait on it (the engine settles them). ``again``:
        an earlier try may have committed; its completions count as accepted."""
        done: dict[int, bool] = {}
        with self.batch(c):
            for x in completions:
                waits = completed(c, self.statements, x, now, again)
                if waits is not None:
                    done[x.job_id] = waits
        return done

    def complete_and_claim(self, c: C_contra, completions: Sequence[Completion], now: float,
                           worker: str, queues: list[str], lease_until: float, limit: int,
                           attempt_limits: Mapping[str, int] | None,
                           controls: Controls) -> tuple[set[int], list[Row], bool] | None:
        """``complete_many``'s completions, only of jobs nothing waits on, and ``claim``,
        in ONE statement: (the ids it accepted, the claim's rows, whether it was the plain
        claim), or None when this claim cannot be written so (the engine then runs both in
        a transaction). Only called where ``completes_in_claim``."""
        return None

    def extend_many(self, c: C_contra, leases: list[tuple[int, int]], now: float,
                    lease_until: float) -> list[tuple[int, object]]:
        """The fenced heartbeats (``sql.EXTEND`` each, in a ``batch``): (id, cancel
        requested) of the jobs still ours."""
        with self.batch(c):
            rows = [c.execute(self.statements.EXTEND, (lease_until, now, job_id, token)).fetchone()
                    for job_id, token in leases]
        return [r for r in rows if r is not None]

    def execute_many(self, c: C_contra, statement: str, rows: Sequence[Row]) -> None:
        """One statement for each row of parameters. By default one ``execute`` each:
        DB-API puts ``executemany`` on cursors, not connections (SQLite's and PostgreSQL's
        dialects use their driver's)."""
        for params in rows:
            c.execute(statement, params)

    def prune_deletes(self) -> tuple[str, ...]:
        """The DELETEs of one prune batch, each with one parameter (``list_param`` of ids)."""
        return (self.statements.DELETE_ATTEMPTS, self.statements.DELETE_DEPS, self.statements.DELETE_JOBS)

    # -- the database's own upkeep (``Store.db_health``, ``Store.db_tidy``) --------------

    def health(self, c: C_contra) -> DbHealth:
        """What the database says of jobq's tables' upkeep (see ``common.db_health``)."""
        raise NotImplementedError

    def tidy(self, c: C_contra, table: str | None) -> bool:
        """Outside any transaction: make room of dead row versions in ``table``
        (PostgreSQL: VACUUM), or of the WAL (SQLite, ``table`` None); False when the
        database could not do it now (a lock or a reader in the way)."""
        raise NotImplementedError
