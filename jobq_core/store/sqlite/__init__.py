"""The SQLite store: one WAL-mode database file shared by any number of processes.

connection.py  opening, pragmas, the connection lock, errors translated to jobq's
schema.py      tables, indexes and forward migrations
statements.py  the SQL, with the fence predicate defined once
rows.py        how rows become ``Job`` records (the claim's hot path)
store.py       ``SqliteStore``: the job operations of ``store.base.Store``
watch.py       the change signal: inotify on the files, confirmed by ``data_version``
"""
from .connection import SYNCHRONOUS_MODES, filesystem_type
from .store import SqliteStore

__all__ = ["SYNCHRONOUS_MODES", "SqliteStore", "filesystem_type"]
