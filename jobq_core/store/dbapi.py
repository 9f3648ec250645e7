"""What the engine uses of a driver's connection: ``execute`` and the cursor it returns.

Every operation of ``store/ops/`` is typed against these, so it can reach nothing a
particular driver adds: sqlite3's and psycopg's connections (and SQLite's ``AppCursor``,
an application's connection) all have them. A backend's ``run`` hands its operations its
own connection type ``C``; what a dialect or a backend needs beyond these (sqlite3's
``executemany`` and ``lastrowid``, psycopg's ``cursor()``) it names on its own ``C``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

Row = tuple[Any, ...]
"""A row as the drivers return it (jobq's connections set no row factory)."""


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Row | None: ...

    def fetchall(self) -> list[Row]: ...


class Connection(Protocol):
    """A DB-API connection used as an executor: each ``execute`` returns its cursor."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Cursor: ...


def one(cursor: Cursor) -> Row:
    """The row of a statement that always returns one (an aggregate without GROUP BY)."""
    row = cursor.fetchone()
    assert row is not None, "an aggregate without GROUP BY returns one row"
    return row


def count(cursor: Cursor) -> int:
    """The one integer of a statement that returns one row of one integer (a ``count(*)``
    or another aggregate without GROUP BY: one row even over no rows)."""
    row = cursor.fetchone()
    assert row is not None, "an aggregate without GROUP BY returns one row"
    n: int = row[0]
    return n


C = TypeVar("C", bound=Connection)
"""A backend's own connection type (``sqlite3.Connection``, ``psycopg.Connection``)."""
