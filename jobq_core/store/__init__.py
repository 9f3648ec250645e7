"""Storage backends behind one contract (``base.Store``). Only this package touches SQL.

``open_store`` picks the backend from the database string: a path or ``sqlite:///path``
opens SQLite, ``postgresql://`` or ``postgres://`` PostgreSQL (imported only then: the
SQLite path never loads psycopg). Options that only one backend understands are passed
through to it, and that backend says so when it is given one it does not know.
"""
from __future__ import annotations

import os
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import JobqError
from .backend import AppConnection
from .base import Store
from .opening import refuse_unknown

SQLITE_OPTIONS = frozenset({"synchronous", "busy_timeout", "read_only", "create", "migrate"})
POSTGRES_SCHEMES = ("postgresql", "postgres")
POSTGRES_OPTIONS = frozenset({"poll_only", "pool_size", "busy_timeout", "read_only",
                              "synchronous", "create", "poll_interval", "application_name",
                              "migrate"})


def sqlite_path(database: str | os.PathLike[str]) -> str | None:
    """The file path when ``database`` names an SQLite database, else None (a URL of
    another scheme).

    ``jobs.db`` and ``/srv/jobs.db`` are paths; ``sqlite:///srv/jobs.db`` is the absolute
    path ``/srv/jobs.db`` and ``sqlite:jobs.db`` the relative path ``jobs.db``.
    """
    text = os.fsdecode(os.fspath(database))
    scheme, sep, rest = text.partition("://")
    if sep and scheme and scheme.replace("+", "").isalnum():
        if scheme.lower() != "sqlite":
            return None
        parts = urlsplit(text)
        if parts.netloc:
            raise ValueError(f"an SQLite URL names a local file, not a host: {text!r} "
                             "(write sqlite:///absolute/path.db)")
        return unquote(parts.path)
    if text[:7].lower() == "sqlite:":
        return unquote(text[7:])
    return text


def open_store(database: str | os.PathLike[str], **options: Any) -> Store:
    """Open the store ``database`` names. SQLite takes the options ``synchronous``,
    ``busy_timeout``, ``read_only`` and ``create`` (see ``SqliteStore``); PostgreSQL
    those of ``PostgresStore``."""
    path = sqlite_path(database)
    if path is None:
        url = os.fsdecode(os.fspath(database))
        scheme = url.partition("://")[0]
        if scheme.lower() in POSTGRES_SCHEMES:
            return _open_postgres(url, options)
        raise ValueError(f"unsupported database URL scheme {scheme!r}: give a file path, "
                         "an sqlite:/// URL or a postgresql:// URL")
    if not path:
        raise ValueError("the database path is empty")
    refuse_unknown("SQLite", options, SQLITE_OPTIONS)
    from .sqlite import SqliteStore

    return SqliteStore(path, **options)


def connection_ops(conn: object) -> AppConnection:
    """The backend module that writes on an application's connection of ``conn``'s type
    (``sqlite/app_connection.py`` or ``postgres/app_connection.py``): ``identity(conn)``,
    ``insert_many(conn, jobs, now)``, ``complete(conn, completion, now)``. Opens nothing:
    a process pool's child uses it on its own application connection. A connection of
    neither kind gets SQLite's, which refuses it with ``UnusableConnection``."""
    if any(k.__module__.split(".")[0] == "psycopg" for k in type(conn).__mro__) or \
            type(conn).__module__.startswith(f"{__name__}.postgres."):  # async_bridge.SyncView
        from .postgres import app_connection as postgres_ops

        return postgres_ops
    from .sqlite import app_connection as sqlite_ops

    return sqlite_ops


def _open_postgres(url: str, options: dict[str, Any]) -> Store:
    try:
        import psycopg  # noqa: F401
    except ImportError as e:
        raise JobqError(f"a postgresql:// database needs the PostgreSQL driver, which is not "
                        f"installed ({e}): pip install 'jobq[postgres]'") from None
    refuse_unknown("PostgreSQL", options, POSTGRES_OPTIONS)
    from .postgres import PostgresStore

    return PostgresStore(url, **options)


__all__ = ["connection_ops", "POSTGRES_OPTIONS", "POSTGRES_SCHEMES", "SQLITE_OPTIONS", "Store", "open_store", "sqlite_path"]
