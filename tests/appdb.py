"""An application's own connection to the queue's database, for the tests of transactional
enqueue and completion: ``sqlite3`` on the same file, ``psycopg`` on the same PostgreSQL
database, behind one dialect (``?`` placeholders). ``conn`` is what a test passes as
``conn=``: the driver's own connection, in its default transaction mode.
"""
from __future__ import annotations

import sqlite3
from typing import Any

from jobq_core.store import sqlite_path


class AppDB:
    def __init__(self, database: str, *, timeout: float = 30.0):
        self.database = database
        path = sqlite_path(database)
        self.postgres = path is None
        if self.postgres:
            import psycopg

            self.conn: Any = psycopg.connect(database, connect_timeout=10)
        else:
            self.conn = sqlite3.connect(path, timeout=timeout, check_same_thread=False)

    def execute(self, sql: str, params: tuple = ()) -> Any:
        if self.postgres:
            sql = sql.replace("?", "%s")
        return self.conn.execute(sql, params)

    def scalar(self, sql: str, params: tuple = ()) -> Any:
        row = self.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def commit(self) -> None:
        self.conn.commit()

    def rollback(self) -> None:
        self.conn.rollback()

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> AppDB:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

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
