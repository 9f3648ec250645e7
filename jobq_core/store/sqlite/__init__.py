"""The SQLite backend: one WAL-mode database file shared by any number of processes.

connection.py      opening, pragmas, write transactions, errors translated to jobq's
schema.py          tables, indexes and forward migrations
dialect.py         the SQL that differs from store/sql.py: the claim, batches, payloads
backend.py         ``SqliteBackend`` (the seam the engine runs on) and ``SqliteStore``
watch.py           the change signal: inotify on the files, confirmed by ``data_version``
app_connection.py  writes on the application's own ``sqlite3`` connection
"""
from .backend import SqliteBackend, SqliteStore
from ...common.filesystem import filesystem_type
from .connection import SYNCHRONOUS_MODES

__all__ = ["SYNCHRONOUS_MODES", "SqliteBackend", "SqliteStore", "filesystem_type"]
