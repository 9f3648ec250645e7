"""Opening a store: what jobq accepts in a database, when it migrates, and what it says
when it will not. Every backend's ``schema.py`` and ``backend.py`` call these; only how the
tables are listed, how ``jobq_meta`` is read and the migrations' DDL are the backend's.

* A database with none of jobq's tables is version 0. Only a store that may create
  (``create``, not ``read_only``) puts jobq's tables in it: the read and admin commands
  leave an application's database (or an empty file) untouched.
* A table with one of jobq's names but no ``jobq_meta`` of jobq's is refused
  (``ForeignTable``), and so is a schema newer than this jobq understands
  (``SchemaTooNew``), both before anything is written.
* An older schema is migrated forward by a writable store, under the backend's write
  lock, reading the version again under it (another process may have migrated); a
  read-only store refuses it, and so does a store opened with ``migrate=False`` (a worker
  started with ``--no-migrate``: a deploy pipeline runs ``jobq migrate`` first), with
  ``SchemaOutdated`` saying which migrations are pending.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager, nullcontext

from ..errors import DatabaseError, ForeignTable, SchemaOutdated, SchemaTooNew
from .dbapi import Connection

APP_ID = "jobq"
MARK = ("INSERT INTO jobq_meta(key, value) VALUES ('application', ?), ('schema_version', ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value")
"""What a migration writes last: the database is jobq's, at this version (``mark``)."""


def installed_version(where: str, tables: Sequence[str], names: Collection[str],
                      read_meta: Callable[[], dict[str, str]], newest: int) -> int:
    """jobq's schema version (0: none yet) from ``names`` (the tables of jobq's names the
    database has) and ``read_meta()`` (``jobq_meta``'s rows; {} when they cannot be read).
    Reads only."""
    ours = [t for t in tables if t in names]
    if not ours:
        return 0
    if "jobq_meta" not in names:
        raise ForeignTable(f"{where} has a table named {ours[0]!r} that jobq did not create")
    meta = read_meta()
    if meta.get("application") != APP_ID or not str(meta.get("schema_version", "")).isdigit():
        raise ForeignTable(f"{where} has a table named 'jobq_meta' that jobq did not create")
    version = int(meta["schema_version"])
    if version > newest:
        raise SchemaTooNew(f"{where} has jobq schema version {version}, newer than this jobq "
                           f"understands ({newest}); upgrade jobq to use it")
    return version


def meta_reader(c: Connection, error: type[Exception],
                guard: Callable[[], AbstractContextManager[object]] = nullcontext,
                ) -> Callable[[], dict[str, str]]:
    """``installed_version``'s ``read_meta`` on ``c``: jobq_meta's rows, {} when the
    driver's ``error`` says they cannot be read, inside ``guard()`` (PostgreSQL's
    savepoint: a failed read must not abort a transaction open around it)."""

    def read() -> dict[str, str]:
        try:
            with guard():
                return dict(c.execute("SELECT key, value FROM jobq_meta").fetchall())
        except error:
            return {}

    return read


def needs_migration(where: str, version: int, newest: int, read_only: bool,
                    create: bool, migrate: bool = True) -> bool:
    """Whether a store opening a database at ``version`` migrates it; raises when it may
    not open it at all."""
    if version < newest and not migrate:
        raise SchemaOutdated(f"{where} {pending(version, newest)}: run `jobq migrate` "
                             "first", version, newest)
    if version == 0 and (read_only or not create):
        raise DatabaseError(f"{where} is not a jobq database (it has no jobq tables; "
                            "`jobq enqueue` or `jobq run` creates them)")
    if version < newest and read_only:
        raise SchemaOutdated(f"{where} {pending(version, newest)}: run `jobq migrate`, or "
                             "open it once without read-only mode", version, newest)
    return version < newest


def pending(version: int, newest: int) -> str:
    """Which migrations a database at ``version`` lacks, in words."""
    if version == 0:
        return f"has no jobq tables yet (schema version {newest} to create)"
    steps = (f"migration {newest}" if newest == version + 1
             else f"migrations {version + 1} to {newest}")
    return (f"has an older jobq schema, version {version} (this jobq's is {newest}: {steps} "
            "pending)")


def choice(name: str, value: object, choices: Sequence[str], store: str = "") -> str:
    """An option's value among ``choices`` (any case), upper-cased; ``ValueError`` saying
    which ones otherwise."""
    text = str(value).upper()
    if text not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}{store}, got {text!r}")
    return text


def refuse_unknown(store: str, options: Collection[str], known: Collection[str]) -> None:
    """``TypeError`` naming the options ``store`` does not take, and the ones it does."""
    unknown = set(options) - set(known)
    if unknown:
        raise TypeError(f"the {store} store does not take {', '.join(sorted(unknown))}; its "
                        f"options are {', '.join(sorted(known))}")


def mark(newest: int) -> tuple[str, str]:
    """``MARK``'s parameters."""
    return APP_ID, str(newest)


class FirstUse:
    """Calling it runs ``open_`` on a store's first use, not when the store is made: a
    module-level ``Queue(url)`` must not fail an application's import while the server is
    down, nor hold a connection in every process that imports it (a process pool's
    children). Once, however many threads arrive together; a failure leaves the store
    unopened, and the next use tries again."""

    def __init__(self, open_: Callable[[], None]):
        self._open = open_
        self.done = False
        self._lock = threading.Lock()

    def __call__(self) -> None:
        if self.done:
            return
        with self._lock:
            if not self.done:
                self._open()
                self.done = True
