"""Each backend checked against the store's protocols, by the type checker.

Every assignment below gives a backend's class (or module) the type of the protocol it
keeps, so a backend that drops a method, renames one or changes its signature fails
``tests/test_types.py`` instead of a run. Nothing here runs: the module is imported by
nothing, and its imports are for the type checker only (a backend's driver need not be
installed).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..types import Watch
    from .backend import AppConnection, Backend
    from .base import Store
    from .postgres import app_connection as postgres_app
    from .postgres.backend import PostgresBackend, PostgresStore
    from .postgres.watch import PgWatch
    from .sqlite import app_connection as sqlite_app
    from .sqlite.backend import SqliteBackend, SqliteStore
    from .sqlite.watch import FileWatch, SqliteWatch

    def sqlite_backend(b: SqliteBackend) -> Backend: return b
    def postgres_backend(b: PostgresBackend) -> Backend: return b
    def sqlite_store(s: SqliteStore) -> Store: return s
    def postgres_store(s: PostgresStore) -> Store: return s
