"""The PostgreSQL store: one database shared by workers on any number of hosts.

connection.py  URLs, connecting, the small pool with reconnect and fork safety, the
               server clock, errors translated to jobq's
schema.py      tables, indexes and forward migrations (under an advisory lock)
statements.py  the SQL, with the fence predicate defined once
store.py       ``PostgresStore``: the job operations of ``store.base.Store``
watch.py       the change signal: LISTEN/NOTIFY (rate-limited) and a snapshot poll
"""
from .store import PostgresStore

__all__ = ["PostgresStore"]
