"""What a store gives the tests: everything they know of it, in one object."""
from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol


class StoreAdapter(Protocol):
    name: str
    """The test id (``test_...[sqlite]``) and what the store reports as
    ``describe()["store"]``."""

    @property
    def schema_version(self) -> int:
        """jobq's schema version on this store today."""
        ...

    @property
    def last_version_without(self) -> Mapping[str, int]:
        """The newest schema version without a feature, by the column that brought it
        (``key``, ``trace_context``): what ``old_schema`` builds to test a migration."""
        ...

    @property
    def slow_change_poll(self) -> Mapping[str, Any]:
        """``Queue`` options that keep the store's own change poll, if it has one, from
        waking an idle worker within a test's span (so that only what the test watches
        can)."""
        ...

    @property
    def writers_held(self) -> float:
        """Seconds for which the store's own table care may hold writers back, by design
        (SQLite: the WAL checkpoint's TRUNCATE, waiting for readers to finish)."""
        ...

    def unavailable(self) -> str | None:
        """Why the store cannot be tested on this machine, or None when it can."""
        ...

    def owns(self, database: str) -> bool:
        """Whether ``database`` names a database of this store."""
        ...

    def database(self, tmp_path: Path) -> contextlib.AbstractContextManager[str]:
        """The database string of a new database for one test (``Queue`` picks the store
        from it), with jobq's tables or to be given them by the first ``Queue``; gone
        afterwards."""
        ...

    def integrity_check(self, database: str) -> str:
        """"ok", or what is broken: the database's own check, and jobq's invariants."""
        ...

    def old_schema(self, database: str, version: int, statements: tuple[str, ...] = ()) -> None:
        """jobq's tables in a database of ``database()`` as an older jobq left them: at
        schema ``version``, then ``statements`` run on them (no parameters)."""
        ...

    def refuse_updates(self, when: str) -> list[str]:
        """Statements that make the database refuse every UPDATE of ``jobq_jobs`` whose new
        row matches ``when`` (a condition on ``NEW``), as a database refuses a write."""
        ...

    # -- the application's connection (``stores.AppDB``) --------------------------------

    def connect(self, database: str, *, timeout: float) -> Any:
        """The driver's own connection to ``database``, in its default transaction mode."""
        ...

    def placeholders(self, sql: str) -> str:
        """``sql`` written with ``?`` placeholders, in the driver's."""
        ...

    def sqlalchemy_url(self, database: str) -> str:
        """A SQLAlchemy URL of ``database``, through the driver jobq uses."""
        ...

    def async_sqlalchemy_url(self, database: str) -> str:
        """A SQLAlchemy URL of ``database`` for ``create_async_engine``, through the
        asyncio driver jobq takes as ``conn=`` (aiosqlite, psycopg)."""
        ...

    async def async_connect(self, database: str) -> Any:
        """The asyncio driver's own connection to ``database`` (aiosqlite, psycopg's
        ``AsyncConnection``), in its default transaction mode."""
        ...

    def use_dict_rows(self, conn: Any) -> None: ...

    def autocommit(self, conn: Any) -> None: ...

    def explicit_transaction(self, conn: Any) -> contextlib.AbstractContextManager[None]: ...


def skip_or_fail(why: str) -> None:
    """A store this machine cannot run is skipped, except under CI, where it must run."""
    import os

    import pytest

    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must run every store: {why}")
    pytest.skip(why)


__all__ = ["StoreAdapter", "skip_or_fail"]
