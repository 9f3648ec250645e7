"""SQLite for the tests: a file per test in the test's ``tmp_path``."""
from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from jobq_core.store import sqlite_path


class SqliteAdapter:
    name = "sqlite"
    slow_change_poll: ClassVar[dict[str, Any]] = {}  # no poll: its watch sees each commit
    last_version_without: ClassVar[dict[str, int]] = {"key": 5, "trace_context": 7, "unmet": 9}

    @property
    def writers_held(self) -> float:
        from jobq_core.store.sqlite.dialect import TRUNCATE_WAIT

        return TRUNCATE_WAIT / 1000

    @property
    def schema_version(self) -> int:
        from jobq_core.store.sqlite.schema import SCHEMA_VERSION

        return SCHEMA_VERSION

    def unavailable(self) -> str | None:
        return None

    def owns(self, database: str) -> bool:
        return sqlite_path(database) is not None

    @contextlib.contextmanager
    def database(self, tmp_path: Path) -> Iterator[str]:
        """A file not made yet (the first ``Queue`` makes it); the test's ``tmp_path``
        goes with it."""
        yield str(tmp_path / "jobs.db")

    def integrity_check(self, database: str) -> str:
        """``PRAGMA integrity_check``; a file never made is sound."""
        if not os.path.exists(database):
            return "ok"
        from jobq_core.store.sqlite import SqliteStore

        store = SqliteStore(database)
        try:
            return store.integrity_check()
        finally:
            store.close()

    def old_schema(self, database: str, version: int, statements: tuple[str, ...] = ()) -> None:
        from jobq_core.store.sqlite.schema import MIGRATIONS, _split_statements

        c = sqlite3.connect(database, isolation_level=None)
        try:
            c.execute("BEGIN IMMEDIATE")
            for script in MIGRATIONS[:version]:
                if callable(script):
                    script(c)
                else:
                    for statement in _split_statements(script):
                        c.execute(statement)
            c.execute("INSERT INTO jobq_meta VALUES ('application', 'jobq'), "
                      "('schema_version', ?)", (str(version),))
            for statement in statements:
                c.execute(statement)
            c.execute("COMMIT")
        finally:
            c.close()

    def refuse_updates(self, when: str) -> list[str]:
        return [(f"CREATE TRIGGER jobq_test_refuse BEFORE UPDATE ON jobq_jobs WHEN {when} "
                 "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END")]

    # -- the application's connection ----------------------------------------------------

    def connect(self, database: str, *, timeout: float) -> sqlite3.Connection:
        path = sqlite_path(database)
        assert path is not None, f"not an SQLite database: {database!r}"
        return sqlite3.connect(path, timeout=timeout, check_same_thread=False)

    def placeholders(self, sql: str) -> str:
        return sql

    def sqlalchemy_url(self, database: str) -> str:
        return f"sqlite:///{sqlite_path(database)}"

    def async_sqlalchemy_url(self, database: str) -> str:
        return f"sqlite+aiosqlite:///{sqlite_path(database)}"

    async def async_connect(self, database: str) -> Any:
        import aiosqlite

        path = sqlite_path(database)
        assert path is not None, f"not an SQLite database: {database!r}"
        return await aiosqlite.connect(path, timeout=30)

    def use_dict_rows(self, conn: sqlite3.Connection) -> None:
        conn.row_factory = sqlite3.Row

    def autocommit(self, conn: sqlite3.Connection) -> None:
        conn.isolation_level = None

    @contextlib.contextmanager
    def explicit_transaction(self, conn: sqlite3.Connection) -> Iterator[None]:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.rollback()
