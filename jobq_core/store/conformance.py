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
    import sqlite3
    from typing import Any

    import psycopg

    from ..types import Watch
    from .backend import AppConnection, Backend
    from .base import EndWatch, Store
    from .postgres import app_connection as postgres_app
    from .postgres.backend import PostgresBackend, PostgresStore
    from .postgres.watch import PgWatch
    from .sqlite import app_connection as sqlite_app
    from .sqlite.backend import SqliteBackend, SqliteStore
    from ..common.file_watch import FileWatch
    from .sqlite.watch import OwnVersion, SqliteEndWatch, SqliteWatch, WatchedFile

    # Each function returns its argument as the protocol's type: the checker then
    # checks every member of the protocol against the backend's (a class is checked
    # through an instance of it, a module as it is).
    def sqlite_backend(backend: SqliteBackend) -> Backend[sqlite3.Connection]:
        return backend

    def postgres_backend(backend: PostgresBackend) -> Backend[psycopg.Connection[Any]]:
        return backend

    def sqlite_store(store: SqliteStore) -> Store:
        return store

    def postgres_store(store: PostgresStore) -> Store:
        return store

    def sqlite_watch(watch: SqliteWatch) -> Watch:
        return watch

    def sqlite_watched(backend: SqliteBackend) -> WatchedFile:  # what its watch reads
        return backend

    def file_watch(watch: FileWatch) -> Watch:
        return watch

    def postgres_watch(watch: PgWatch) -> Watch:
        return watch

    def sqlite_end_watch(watch: SqliteEndWatch) -> EndWatch:
        return watch

    def own_version(version: OwnVersion) -> WatchedFile:
        return version

    def postgres_end_watch(watch: PgWatch) -> EndWatch:
        return watch

    sqlite_app_connection: AppConnection = sqlite_app
    postgres_app_connection: AppConnection = postgres_app
