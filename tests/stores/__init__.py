"""Every store the tests run on, each behind one adapter object: what a test may know of a
store is here and nowhere else, the way River's ``riverdrivertest`` takes one driver and
huey's ``StorageTests`` runs once per backend.

A store joins the tests with one module here (a ``StoreAdapter``) and one line in
``ADAPTERS``; the store contract (``tests/store_contract``), the worker tests
(``tests/worker``) and the API's (``tests/api``) then run on it through the ``adapter``
and ``database`` fixtures of ``tests/conftest.py``. A test that only one store can run says so with
``@pytest.mark.stores("sqlite", why="...")``; one whose run on a store belongs in the slow
tier, with ``@pytest.mark.slow_on("postgresql", why="...")``.

``AppDB`` is an application's own connection to a queue's database (for ``conn=``),
opened by the adapter that owns the database string; child processes open it from that
string alone.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

from .adapter import StoreAdapter
from .postgres import PostgresAdapter
from .sqlite import SqliteAdapter

ADAPTERS: list[StoreAdapter] = [SqliteAdapter(), PostgresAdapter()]
BY_NAME = {a.name: a for a in ADAPTERS}


def adapter_for(database: str | Path) -> StoreAdapter:
    """The adapter of the store ``database`` names (as ``Queue`` picks it)."""
    for adapter in ADAPTERS:
        if adapter.owns(str(database)):
            return adapter
    raise ValueError(f"no test adapter owns {database!r}")


class AppDB:
    """The application's connection: the driver's own, in its default transaction mode
    (``conn`` is what a test passes as ``conn=``), with SQL written once, ``?``
    placeholders, for every store."""

    def __init__(self, database: str | Path, *, timeout: float = 30.0):
        self.database = str(database)
        self.adapter = adapter_for(self.database)
        self.conn: Any = self.adapter.connect(self.database, timeout=timeout)

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        return self.conn.execute(self.adapter.placeholders(sql), params)

    def scalar(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        row = self.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def commit(self) -> None:
        self.conn.commit()

    def rollback(self) -> None:
        self.conn.rollback()

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def use_dict_rows(self) -> None:
        """The driver's own rows-as-mappings factory on the connection, as an application
        may set it."""
        self.adapter.use_dict_rows(self.conn)

    def autocommit(self) -> None:
        """The connection in the driver's autocommit mode (no transaction of its own)."""
        self.adapter.autocommit(self.conn)

    def explicit_transaction(self) -> contextlib.AbstractContextManager[None]:
        """A transaction opened explicitly on an autocommit connection, rolled back at the
        end of the block."""
        return self.adapter.explicit_transaction(self.conn)

    def create_accounts(self, rows: int = 0) -> None:
        """The application's table: ``accounts(id, n)``, rows 1..``rows`` at 0; committed."""
        self.execute("CREATE TABLE IF NOT EXISTS accounts(id integer PRIMARY KEY, "
                     "n integer NOT NULL DEFAULT 0)")
        for i in range(1, rows + 1):
            self.execute("INSERT INTO accounts(id, n) VALUES (?, 0)", (i,))
        self.commit()

    def counts(self) -> dict[int, int]:
        rows = self.execute("SELECT id, n FROM accounts ORDER BY id").fetchall()
        self.commit()  # a read opened a transaction on psycopg: end it
        return dict(rows)


def fresh_database(adapter: StoreAdapter, tmp_path: Path) -> Iterator[str]:
    """A new database of ``adapter``'s store for one test; after it, the store's integrity
    check must still say "ok"."""
    with adapter.database(tmp_path) as database:
        yield database
        assert adapter.integrity_check(database) == "ok"


__all__ = ["ADAPTERS", "BY_NAME", "AppDB", "StoreAdapter", "adapter_for", "fresh_database"]
