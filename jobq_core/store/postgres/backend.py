"""The PostgreSQL backend, for workers on many hosts, and ``PostgresStore``, the engine on it.

Concurrency model: each store owns a small pool (``store/pool.py``, two connections by
default) shared by the threads of its process, plus one LISTEN connection per watch: a
worker needs three whatever its concurrency. Row locks do the rest: claims skip each
other's rows (``SKIP LOCKED``), and every write to a running job carries the fence and
checks what it changed. Each operation is one statement in autocommit mode where it can
be (claim, complete, heartbeat: one round trip each), else one transaction.

Every operation runs through ``Pool.run``, which retries it on a fresh connection
after a break. An operation that may have committed before the break (``again``) checks
what it finds: a completion whose job is already succeeded under its token was accepted;
a failure whose attempt row exists was recorded. An enqueue cannot tell its jobs from
another's, so it reports the break instead of adding them twice.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pgerrors
from psycopg.pq import TransactionStatus

from ...common.checks import check_int, check_seconds
from ...clock import Clock
from .. import opening
from ..backend import KeyTaken
from ..base import ConnectionIdentity
from ..dbapi import one
from ..engine import Engine
from . import app_connection
from ..pool import Pool
from ..server_clock import ServerClock
from .connection import PgDriver, parse_url, server_time
from .dialect import DIALECT, ENDED_CHANNEL, NOTIFY, claim_params, claim_shape, text_array
from .notify import Notifier
from .schema import SCHEMA_VERSION, installed_version, migrate
from .watch import PgWatch, read_snapshot

T = TypeVar("T")
SYNCHRONOUS = {"NORMAL": "off", "FULL": "on"}


class PostgresBackend:
    """jobq on PostgreSQL. ``url`` is a libpq URL (``postgresql://user@host/db``), which
    may also carry ``poll_only=true``.

    Options: ``poll_only`` (no LISTEN/NOTIFY and no prepared statements: for PgBouncer in
    transaction mode; idle workers then find work by polling), ``pool_size`` (connections
    shared by the process's threads, default 2), ``busy_timeout`` (seconds an operation
    waits for a row lock, and retries after the connection broke, before it reports the
    database unavailable; default 30), ``read_only`` (the session cannot write and the
    schema is not created), ``synchronous`` (``FULL``: ``synchronous_commit=on``;
    ``NORMAL``: ``off``, a server crash may lose the last commits, as a power loss may
    under SQLite's NORMAL; default: the server's setting), ``create`` (False: refuse a
    database without jobq's tables instead of creating them; jobq never creates the
    PostgreSQL database itself), ``poll_interval`` (seconds between a watch's snapshot
    polls, default 1), ``application_name``.
    """

    name = app_connection.STORE

    def __init__(self, url: str, *, poll_only: bool | None = None, pool_size: int = 2,
                 busy_timeout: float = 30.0, read_only: bool = False,
                 synchronous: str | None = None, create: bool = True,
                 poll_interval: float = 1.0, application_name: str = "jobq",
                 migrate: bool = True):
        check_int("pool_size", pool_size, minimum=1)
        check_seconds("busy_timeout", busy_timeout)
        check_seconds("poll_interval", poll_interval, positive=True)
        conninfo, self.display, url_options = parse_url(url)
        if poll_only is None:
            poll_only = url_options.get("poll_only", False)
        if synchronous is not None:
            synchronous = opening.choice("synchronous", synchronous, tuple(SYNCHRONOUS),
                                         " on PostgreSQL")
        if not re.fullmatch(r"[\w .:-]{1,63}", application_name):
            raise ValueError(f"application_name must be plain text, got {application_name!r}")
        self.url, self.where = url, self.display
        scheme, _, rest = self.display.partition("://")  # the display has no password
        netloc, slash, path = rest.partition("/")
        self.location = f"{scheme}://{netloc.rpartition('@')[2]}{slash}{path}"
        self.poll_only = bool(poll_only)
        self.notifies = not self.poll_only
        self.read_only = read_only
        self.synchronous = synchronous
        self.poll_interval = float(poll_interval)
        self.frozen = False
        self.dialect = DIALECT
        setup = [f"SET application_name = '{application_name}'",
                 f"SET lock_timeout = {math.ceil(busy_timeout * 1000):d}"]
        if read_only:
            setup.append("SET default_transaction_read_only = on")
        if synchronous:
            setup.append(f"SET synchronous_commit = {SYNCHRONOUS[synchronous]}")
        driver = PgDriver(conninfo, self.display, prepare=not poll_only, setup="; ".join(setup),
                          connect_timeout=min(10.0, busy_timeout + 2))
        self._conns = Pool(driver, self.display, size=pool_size, reconnect_for=busy_timeout)
        self._open = opening.FirstUse(lambda: self._conns.open_first(self._opening))
        self._create, self._migrate = create, migrate
        self._server_version = "?"
        self._identity: tuple[object, ...] = ()
        self._clock = ServerClock(self._conns, server_time, self._open)
        self._notifier = Notifier(self._conns)

    def _opening(self, first: psycopg.Connection) -> None:
        """The store's first connection (``_open``, on its first use: ``opening.FirstUse``)
        checks the schema (creating or migrating it) and syncs the server's clock; a server
        that cannot be reached, a wrong password or database fails there, in one line."""
        self._server_version = first.info.parameter_status("server_version") or "?"
        version = installed_version(first, self.display)
        if opening.needs_migration(self.display, version, SCHEMA_VERSION,
                                   self.read_only, self._create, self._migrate):
            migrate(first, self.display)
        self._clock.sync(first)
        self._identity = _own_identity(first)

    @property
    def server_version(self) -> str:
        self._open()
        return self._server_version

    # -- running operations --------------------------------------------------------------

    def run(self, op: Callable[[psycopg.Connection, bool], T]) -> T:
        self._open()
        try:
            return self._conns.run(op)
        finally:
            self._notifier.flush()  # arm the trailing NOTIFY of what ``due`` held back

    @contextmanager
    def transaction(self, c: psycopg.Connection) -> Iterator[psycopg.Connection]:
        if c.info.transaction_status != TransactionStatus.IDLE:
            yield c  # join the transaction that is open
            return
        with c.transaction():
            yield c

    @contextmanager
    def snapshot(self, c: psycopg.Connection) -> Iterator[psycopg.Connection]:
        """One REPEATABLE READ, read-only transaction, so several reads agree."""
        c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield c
        except BaseException:
            c.execute("ROLLBACK")
            raise
        c.execute("COMMIT")

    @contextmanager
    def savepoint(self, c: psycopg.Connection) -> Iterator[psycopg.Connection]:
        try:
            with c.transaction():  # nested in the open transaction: a savepoint
                yield c
        except pgerrors.UniqueViolation as e:
            raise KeyTaken(str(e)) from None

    def notify(self, c: psycopg.Connection, queues: Iterable[str]) -> None:
        due = self.due(queues)
        if due:
            c.execute(NOTIFY, (text_array(due),))

    def limits_changed(self, c: psycopg.Connection) -> None:
        pass  # the claim statement moves the rate window itself (its ``win`` step)

    def due(self, queues: Iterable[str]) -> list[str]:
        """The queues to notify now (none in poll-only mode); the others get a trailing
        notification once ``run`` saw the transaction end. Delayed jobs notify too: an idle
        worker then sets its timer for their ``run_at``."""
        return [] if self.poll_only else self._notifier.due(queues)

    # -- the application's connection (see app_connection.py) ---------------------------

    @property
    def app(self) -> ModuleType:
        return app_connection

    def same_database(self, identity: ConnectionIdentity) -> bool:
        if identity.store != self.name:
            return False
        self._open()
        if identity.key == self._identity:
            return True
        # The server may have restarted since this store read its own identity (a new
        # start time): read it again, once, before saying no.
        self._identity = self._conns.run(lambda c, _again: _own_identity(c))
        return identity.key == self._identity

    def mismatch(self, identity: ConnectionIdentity) -> str:
        self._open()
        if identity.key[1] == self._identity[1] and identity.key[2] is not None:
            return (" (a database of that name, but another server, or another jobq_jobs "
                    "table through the connection's search_path)")
        return ""

    # -- the rest -------------------------------------------------------------------------

    def server_clock(self) -> Clock:
        return self._clock

    def write_blockers(self) -> list[str]:
        return []  # row locks: a stopped worker blocks only its own rows

    def check(self) -> None:
        """Open the store if it is not open yet (see ``_open``: the tables checked, created
        or migrated); nothing else to do: a server that goes away fails the next statement
        loudly (and the store reconnects), unlike a deleted SQLite file that stays
        readable."""
        self._open()

    def describe(self) -> dict[str, str | None]:
        return {"store": self.name, "postgresql": self.server_version, "url": self.display,
                "signal": "poll" if self.poll_only else "listen",
                "pool_size": str(self._conns.size), "synchronous": self.synchronous}

    def watch(self, *, poll_interval: float | None = None) -> PgWatch:
        """A change signal: LISTEN on a connection of its own, plus a snapshot poll every
        ``poll_interval`` seconds (the store's, 1 s by default), with jitter. Poll-only
        and read-only stores (the monitor's) poll only: no extra connection."""
        self._open()
        return PgWatch(self._conns, listen=not (self.poll_only or self.read_only),
                       poll_interval=poll_interval or self.poll_interval)

    def watch_ends(self) -> PgWatch:
        """A signal for ended jobs (``Queue.wait``): LISTEN to the channel every statement
        that ends jobs notifies, naming them (``dialect.announce``); poll-only stores poll
        the snapshot alone."""
        self._open()
        return PgWatch(self._conns, listen=not self.poll_only, poll_interval=self.poll_interval,
                       channel=ENDED_CHANNEL)

    def close(self) -> None:
        self._notifier.close()
        self._conns.close()


class PostgresStore(Engine[psycopg.Connection]):
    """jobq on a PostgreSQL database: the engine over ``PostgresBackend`` (its options)."""

    backend: PostgresBackend

    def __init__(self, url: str, **options: Any):  # PostgresBackend's
        super().__init__(PostgresBackend(url, **options))
        b = self.backend
        self.url, self.display, self.poll_only = b.url, b.display, b.poll_only
        self.read_only, self.synchronous, self.poll_interval = (
            b.read_only, b.synchronous, b.poll_interval)
        self._conns = b._conns

    @property
    def server_version(self) -> str:
        return self.backend.server_version

    def change_marker(self) -> str:
        """What the watch's poll reads: changes whenever a transaction on the server
        started writing or ended."""
        return self.backend.run(lambda c, _again: read_snapshot(c))

    def integrity_check(self) -> str:
        """"ok", or what breaks jobq's invariants in the rows (``invariants_broken``; the
        server checks its own storage)."""
        return "; ".join(self.invariants_broken()) or "ok"

    def explain_claim(self, queues: Sequence[str] | None = None, limit: int = 1,
                      now: float = 0.0) -> list[str]:
        """The claim's query plan at time ``now`` (tests assert it uses the partial
        indexes). Plain EXPLAIN: EXPLAIN ANALYZE would claim."""
        queues = list(queues or [])
        params = claim_params(queues, now, limit, 0.0, "w")

        def op(c: psycopg.Connection, _again: bool) -> list[str]:
            controls = self._controls.get(lambda: c.execute(self.statements.CONTROL_STATE).fetchall())
            return [r[0] for r in c.execute("EXPLAIN " + claim_shape(queues, controls)[0],
                                            params)]

        return self.backend.run(op)

    def table_sizes(self) -> dict[str, int]:
        """Bytes on disk of each jobq table with its indexes and TOAST (for bloat checks)."""
        rows = self.backend.run(lambda c, _again: c.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid=c.relnamespace WHERE n.nspname=current_schema() "
            "AND c.relkind='r' AND c.relname LIKE 'jobq\\_%%'").fetchall())
        return dict(rows)


def _own_identity(c: psycopg.Connection) -> tuple[object, ...]:
    """What ``app_connection.identity`` reads, on one of the store's own connections."""
    start, database, table, _host, _port = one(c.execute(app_connection.IDENTITY))
    return (start, database, table)

