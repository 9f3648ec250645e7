"""The PostgreSQL backend: one database shared by workers on any number of hosts.

connection.py      URLs, connecting, psycopg for the store's pool (``store/pool.py``), errors
                   translated to jobq's
schema.py          tables, indexes and forward migrations (under an advisory lock)
dialect.py         the SQL that differs from store/sql.py: the claim, batches as arrays
backend.py         ``PostgresBackend`` (the seam the engine runs on) and ``PostgresStore``
notify.py          sending the change signal: NOTIFY, limited per queue
watch.py           the change signal: LISTEN and a snapshot poll
app_connection.py  writes on the application's own ``psycopg`` connection
"""
from .backend import PostgresBackend, PostgresStore

__all__ = ["PostgresBackend", "PostgresStore"]
