"""PostgreSQL for the tests: a database per test on the tests' server (``tests/pgserver.py``),
a copy of one migrated once, so that jobq's tables are already made."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from jobq_core.store import POSTGRES_SCHEMES

if TYPE_CHECKING:
    import pgserver


class PostgresAdapter:
    name = "postgresql"
    # its watch also polls a snapshot every second: a test of what else wakes a worker
    # moves the poll out of its way
    slow_change_poll: ClassVar[dict[str, Any]] = {"poll_interval": 30.0}
    last_version_without: ClassVar[dict[str, int]] = {"key": 5, "trace_context": 6, "unmet": 7}

    @property
    def writers_held(self) -> float:
        return 0.0  # VACUUM and ANALYZE block no writer

    @property
    def schema_version(self) -> int:
        from jobq_core.store.postgres.schema import SCHEMA_VERSION

        return SCHEMA_VERSION

    def server(self) -> pgserver.Server:
        """The tests' server; ``pgserver.Unavailable`` says why there is none."""
        import pgserver

        return pgserver.server()

    def unavailable(self) -> str | None:
        import pgserver

        try:
            self.server()
        except pgserver.Unavailable as e:
            return str(e)
        return None

    def owns(self, database: str) -> bool:
        return database.partition("://")[0].lower() in POSTGRES_SCHEMES

    @contextlib.contextmanager
    def database(self, tmp_path: Path) -> Iterator[str]:
        server = self.server()
        name, url = server.create_database(migrated=True)
        try:
            yield url
        finally:
            server.recycle(name)

    def integrity_check(self, database: str) -> str:
        """jobq's invariants in the rows (the server checks its own storage)."""
        from jobq_core.store.postgres import PostgresStore

        store = PostgresStore(database, create=False)
        try:
            return store.integrity_check()
        finally:
            store.close()

    def old_schema(self, database: str, version: int, statements: tuple[str, ...] = ()) -> None:
        """The tables ``database()`` made are dropped first."""
        import psycopg

        from jobq_core.store.postgres.schema import MIGRATIONS, TABLES

        with psycopg.connect(database, autocommit=True) as c:
            c.execute("DROP TABLE " + ", ".join(TABLES) + "; DROP SEQUENCE jobq_tokens")
            for script in MIGRATIONS[:version]:
                c.execute(script)
            c.execute("INSERT INTO jobq_meta VALUES ('application', 'jobq'), "
                      "('schema_version', %s)", (str(version),))
            for statement in statements:
                c.execute(statement)

    def refuse_updates(self, when: str) -> list[str]:
        return [("CREATE FUNCTION jobq_test_refuse() RETURNS trigger AS $$ "
                 "BEGIN RAISE EXCEPTION 'refused by the test'; END $$ LANGUAGE plpgsql"),
                ("CREATE TRIGGER jobq_test_refuse BEFORE UPDATE ON jobq_jobs FOR EACH ROW "
                 f"WHEN ({when}) EXECUTE FUNCTION jobq_test_refuse()")]

    # -- the application's connection ----------------------------------------------------

    def connect(self, database: str, *, timeout: float) -> Any:
        import psycopg

        return psycopg.connect(database, connect_timeout=10)

    def placeholders(self, sql: str) -> str:
        return sql.replace("?", "%s")

    def sqlalchemy_url(self, database: str) -> str:
        return "postgresql+psycopg://" + database.partition("://")[2]

    def async_sqlalchemy_url(self, database: str) -> str:
        return self.sqlalchemy_url(database)  # the psycopg dialect serves both

    async def async_connect(self, database: str) -> Any:
        import psycopg

        return await psycopg.AsyncConnection.connect(database, connect_timeout=10)

    def use_dict_rows(self, conn: Any) -> None:
        from psycopg.rows import dict_row

        conn.row_factory = dict_row

    def autocommit(self, conn: Any) -> None:
        conn.autocommit = True

    @contextlib.contextmanager
    def explicit_transaction(self, conn: Any) -> Iterator[None]:
        with conn.transaction(force_rollback=True):
            yield
