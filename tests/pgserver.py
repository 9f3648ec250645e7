"""A PostgreSQL server for the tests, and a fresh database for each test: empty, or with
jobq's tables already made (copied from a template database migrated once per process).

Where the server comes from, first match wins:

1. ``$JOBQ_TEST_PG``: a URL of a server to use (its user may create databases);
2. a throwaway cluster of our own (``initdb`` + ``pg_ctl`` on a free port in a temp dir,
   stopped at the end), when the server binaries are installed (``pg_ctl`` on PATH or under
   ``/usr/lib/postgresql/*/bin``); as root, it runs as the ``postgres`` user;
3. the server at ``127.0.0.1:5432`` (user postgres), when one answers there.

With none, PostgreSQL tests skip with the reason, except under CI (``CI=true``), where
they fail: CI must run them.

Only the throwaway cluster can be restarted by a test (``Server.restart``).
"""
from __future__ import annotations

import atexit
import contextlib
import glob
import os
import pwd
import queue
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

FALLBACK_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
SPARES = 2  # copies of the migrated template kept made ahead (see Server.create_database)
# What a database's schema is, read from the catalogs: two databases with the same answer
# have the same tables, columns, indexes, constraints, triggers, functions, rules, schemas,
# extensions, grants, storage options and database-level settings (``Server.recycle``).
SHAPE = """
SELECT md5(string_agg(x, '|' ORDER BY x)) FROM (
  SELECT 'rel ' || n.nspname || '.' || c.relname || ' ' || c.relkind::text || ' '
         || coalesce(array_to_string(c.reloptions, ','), '') || ' ' || coalesce(c.relacl::text, '')
         || ' ' || c.relpersistence::text || ' ' || c.relowner::regrole::text AS x
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
  UNION ALL
  SELECT 'col ' || a.attrelid::regclass::text || '.' || a.attname || ' '
         || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull || ' '
         || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
   WHERE a.attnum > 0 AND NOT a.attisdropped
     AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
  UNION ALL
  SELECT 'idx ' || pg_get_indexdef(i.indexrelid) FROM pg_index i
    JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
  UNION ALL
  SELECT 'con ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
    FROM pg_constraint WHERE connamespace NOT IN (SELECT oid FROM pg_namespace
                                                  WHERE nspname IN ('pg_catalog', 'information_schema'))
  UNION ALL
  SELECT 'trg ' || pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
  UNION ALL
  SELECT 'fn ' || p.oid::regprocedure::text || ' ' || md5(coalesce(p.prosrc, ''))
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
   WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
  UNION ALL
  SELECT 'rule ' || schemaname || '.' || tablename || ' ' || rulename || ' ' || definition FROM pg_rules
  UNION ALL
  SELECT 'view ' || schemaname || '.' || viewname || ' ' || definition FROM pg_views
   WHERE schemaname NOT IN ('pg_catalog', 'information_schema')
  UNION ALL
  SELECT 'ns ' || nspname || ' ' || coalesce(nspacl::text, '') FROM pg_namespace
  UNION ALL
  SELECT 'ext ' || extname || ' ' || extversion FROM pg_extension
  UNION ALL
  SELECT 'set ' || coalesce(setrole::regrole::text, '-') || ' ' || array_to_string(setconfig, ',')
    FROM pg_db_role_setting WHERE setdatabase = (SELECT oid FROM pg_database
                                                 WHERE datname = current_database())
  UNION ALL
  SELECT 'db ' || datdba::regrole::text || ' ' || coalesce(datacl::text, '') || ' ' || datallowconn
         || ' ' || datconnlimit FROM pg_database WHERE datname = current_database()
) shape(x)
"""
# What only a test leaves: other sessions, a prepared transaction, a large object, a vacuum
# or an ANALYZE (their statistics outlive a TRUNCATE and steer the planner).
LEFTOVERS = """
SELECT (SELECT count(*) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid())
     + (SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database())
     + (SELECT count(*) FROM pg_largeobject_metadata)
     + (SELECT coalesce(sum(vacuum_count + autovacuum_count + analyze_count
                            + autoanalyze_count), 0) FROM pg_stat_user_tables)
     + (SELECT count(*) FROM pg_stat_progress_vacuum WHERE datname = current_database())
"""


class Unavailable(Exception):
    """No PostgreSQL server for the tests."""


@dataclass
class Server:
    url: str  # admin URL (a database we may CREATE DATABASE from)
    origin: str  # where it came from, for messages
    datadir: str | None = None  # set for our throwaway cluster
    bindir: str | None = None
    run_as: list[str] | None = None
    options: str = ""  # the throwaway cluster's server options (port, fsync off, ...)
    # the migrated template, made on first use; whether CREATE DATABASE takes STRATEGY (15+)
    _template: str | None = field(default=None, init=False)
    # the template's shape (SHAPE), its tables and the rows in them, its sequences
    _shape: str | None = field(default=None, init=False)
    _rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict, init=False)
    _sequences: list[str] = field(default_factory=list, init=False)
    _file_copy: bool | None = field(default=None, init=False)
    # copies of the template made ahead by a thread of their own, and what drives it
    _spares: queue.SimpleQueue[str] = field(default_factory=queue.SimpleQueue, init=False)
    _wanted: threading.Event = field(default_factory=threading.Event, init=False)
    _filler: threading.Thread | None = field(default=None, init=False)
    _closing: bool = field(default=False, init=False)

    def database_url(self, name: str) -> str:
        parts = urlsplit(self.url)
        return urlunsplit(parts._replace(path=f"/{name}"))

    def admin(self) -> psycopg.Connection:
        return psycopg.connect(self.url, autocommit=True, connect_timeout=5)

    def create_database(self, *, migrated: bool = False) -> tuple[str, str]:
        """(name, URL) of a new database: empty, or with ``migrated`` a copy of a database
        that ``jobq_core.Queue`` has opened once (its tables made, at its schema version).

        FILE_COPY (PostgreSQL 15+; older servers copy the default way) checkpoints, which
        costs little with the throwaway cluster's fsync off. Measured on it, alone: 0.03 s
        for a copy of the template against 0.13 s for an empty database (WAL_LOG copy of
        template1) and the migration after it; within the suite, where each checkpoint
        also writes what earlier tests left dirty, the 158 PostgreSQL contract tests took
        54 s against 62-70 s (on a shared, loaded 2-core machine).

        A migrated copy is taken from ``SPARES`` made ahead by a thread (``_fill``), so
        that a test does not wait for its copy while the machine is busy with tests that
        wait on workers and clocks: within the suite each copy took a median 0.2 s, a
        test's setup 0.5 s (99 worker tests, loaded 2-core machine)."""
        if migrated:
            try:
                name = self._spares.get_nowait()
            except queue.Empty:
                name = self._copy(self._migrated_template())
            self._refill()
            return name, self.database_url(name)
        name = self._copy("template1")
        return name, self.database_url(name)

    def _copy(self, template: str) -> str:
        name = f"jobq_t_{uuid.uuid4().hex[:12]}"
        with self.admin() as c:
            if self._file_copy is None:
                self._file_copy = c.info.server_version >= 150000
            strategy = " STRATEGY FILE_COPY" if self._file_copy else ""
            c.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"{strategy}')
        return name

    def _refill(self) -> None:
        with _lock:
            if self._filler is None:
                self._filler = threading.Thread(target=self._fill, name="pgserver-spares",
                                                daemon=True)
                self._filler.start()
                atexit.register(self._drop_spares)
        self._wanted.set()

    def _fill(self) -> None:
        """Keeps ``SPARES`` copies made, each time a test takes one. A copy that fails (the
        server stopped by a test) is tried again at the next take."""
        while not self._closing:
            self._wanted.wait()
            self._wanted.clear()
            while not self._closing and self._spares.qsize() < SPARES:
                try:
                    self._spares.put(self._copy(self._migrated_template()))
                except psycopg.Error:
                    break

    def _drop_spares(self) -> None:
        """At exit: the copies no test took are dropped (a server of ``$JOBQ_TEST_PG``
        keeps no databases of ours), after the thread has finished the one it makes."""
        self._closing = True
        self._wanted.set()
        if self._filler is not None:
            self._filler.join(30)
        while not self._spares.empty():
            self._drop_quietly(self._spares.get_nowait())

    def _migrated_template(self) -> str:
        """Made once, under a lock; nothing may stay connected to it (CREATE DATABASE
        refuses to copy a database in use), so the Queue that migrates it is closed."""
        with _lock:
            if self._template is None:
                from jobq_core import Queue

                name = f"jobq_template_{uuid.uuid4().hex[:12]}"
                with self.admin() as c:
                    c.execute(f'CREATE DATABASE "{name}"')
                with Queue(self.database_url(name)) as q:
                    q.check()  # connects (on first use): the tables made
                with psycopg.connect(self.database_url(name), autocommit=True) as c:
                    self._shape = _one(c, SHAPE)
                    tables = [r[0] for r in c.execute(
                        "SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) "
                        "FROM pg_tables WHERE schemaname NOT IN "
                        "('pg_catalog', 'information_schema') ORDER BY 1")]
                    self._rows = {t: c.execute(f"SELECT * FROM {t}").fetchall() for t in tables}
                    self._sequences = [r[0] for r in c.execute(
                        "SELECT quote_ident(schemaname) || '.' || quote_ident(sequencename) "
                        "FROM pg_sequences")]
                self._template = name
                atexit.register(self._drop_quietly, name)
            return self._template

    def _drop_quietly(self, name: str) -> None:
        try:
            self.drop_database(name)
        except psycopg.Error:
            pass  # the server is gone already

    def recycle(self, name: str) -> None:
        """A test's database made a spare again, as a copy of the migrated template would
        be, or dropped where it cannot be. It can when nothing else is connected to it any
        more (a process a test left running could write into the next test's database)
        and its schema is the template's (``SHAPE``), and no test left what emptying its
        tables would not undo (``LEFTOVERS``): then its tables are emptied, the template's
        rows put back and its sequences restarted, in one transaction. Measured alone:
        0.015 s, against 0.07 s for a copy and 0.01 s for a DROP; within the fast tier on
        a loaded 2-core machine, a PostgreSQL test's setup waited 0.47 s at p90 for a
        copy its process's filler had not made yet."""
        if self._template is None:
            self.drop_database(name)
            return
        try:
            with psycopg.connect(self.database_url(name), autocommit=True,
                                 connect_timeout=5) as c:
                # a session's end reaches pg_stat_activity a moment after its client closed
                deadline = time.monotonic() + 0.5
                while (left := _one(c, LEFTOVERS)) and time.monotonic() < deadline:
                    time.sleep(0.01)
                if left or _one(c, SHAPE) != self._shape:
                    raise LookupError
                with c.transaction():
                    c.execute("TRUNCATE " + ", ".join(self._rows) + " RESTART IDENTITY")
                    for table, rows in self._rows.items():
                        if rows:
                            marks = ", ".join(["%s"] * len(rows[0]))
                            c.cursor().executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
                    for sequence in self._sequences:
                        c.execute(f"ALTER SEQUENCE {sequence} RESTART")
        except (LookupError, psycopg.Error):
            self.drop_database(name)
            return
        self._spares.put(name)

    def drop_database(self, name: str) -> None:
        with self.admin() as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    @property
    def restartable(self) -> bool:
        return self.datadir is not None

    def restart(self) -> None:
        """``pg_ctl restart -m fast`` (throwaway cluster only)."""
        assert self.datadir and self.bindir
        _run([*(self.run_as or []), os.path.join(self.bindir, "pg_ctl"), "-D", self.datadir,
              "-w", "-m", "fast", "restart", "-l", os.path.join(self.datadir, "log")])

    @contextlib.contextmanager
    def halted(self) -> Iterator[None]:
        """The server stopped (``pg_ctl stop -m fast``: every connection refused) for the
        ``with`` block, then started again (throwaway cluster only)."""
        assert self.datadir and self.bindir
        ctl = [*(self.run_as or []), os.path.join(self.bindir, "pg_ctl"), "-D", self.datadir]
        _run([*ctl, "-w", "-m", "fast", "stop"])
        try:
            yield
        finally:
            _run([*ctl, "-w", "-o", self.options, "-l", os.path.join(self.datadir, "log"),
                  "start"])

    def stop(self) -> None:
        if self.datadir and self.bindir:
            subprocess.run([*(self.run_as or []), os.path.join(self.bindir, "pg_ctl"), "-D",
                            self.datadir, "-m", "immediate", "stop"],
                           capture_output=True, timeout=60)
            shutil.rmtree(os.path.dirname(self.datadir), ignore_errors=True)


def _one(c: psycopg.Connection[Any], query: str) -> Any:
    """The one value of a query that returns one row."""
    row = c.execute(query).fetchone()
    assert row is not None
    return row[0]


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise Unavailable(f"{' '.join(cmd[:3])}... failed: {(proc.stderr or proc.stdout).strip()[-500:]}")


def _bindir() -> str | None:
    found = shutil.which("pg_ctl")
    if found:
        return os.path.dirname(found)
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(os.path.join(candidate, "initdb")):
            return candidate
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _throwaway(bindir: str, settings: dict[str, str] | None = None) -> Server:
    run_as: list[str] = []
    top = tempfile.mkdtemp(prefix="jobq-pg-")
    if os.geteuid() == 0:  # initdb refuses to run as root
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            raise Unavailable("running as root and there is no 'postgres' user for initdb") from None
        if not shutil.which("runuser"):
            raise Unavailable("running as root and runuser is missing")
        os.chown(top, pw.pw_uid, pw.pw_gid)
        os.chmod(top, 0o700)
        run_as = ["runuser", "-u", "postgres", "--"]
    datadir = os.path.join(top, "data")
    _run([*run_as, os.path.join(bindir, "initdb"), "-D", datadir, "-U", "postgres",
          "-A", "trust", "-E", "UTF8", "--no-sync"])
    port = _free_port()
    options = (f"-c port={port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={top} "
               "-c fsync=off -c full_page_writes=off -c synchronous_commit=off "
               "-c max_connections=300 -c shared_buffers=64MB")
    options += "".join(f" -c {k}={v}" for k, v in (settings or {}).items())
    _run([*run_as, os.path.join(bindir, "pg_ctl"), "-D", datadir, "-w", "-o", options,
          "-l", os.path.join(datadir, "log"), "start"])
    server = Server(f"postgresql://postgres@127.0.0.1:{port}/postgres",
                    f"a throwaway cluster in {top}", datadir, bindir, run_as, options)
    atexit.register(server.stop)
    return server


def _reachable(url: str) -> bool:
    try:
        psycopg.connect(url, connect_timeout=3).close()
        return True
    except psycopg.Error:
        return False


_lock = threading.Lock()
_server: Server | None = None
_why: str | None = None


def server() -> Server:
    """The tests' server (started once per process); ``Unavailable`` says why there is none."""
    global _server, _why
    with _lock:
        if _server is not None:
            return _server
        if _why is not None:
            raise Unavailable(_why)
        reasons = []
        url = os.environ.get("JOBQ_TEST_PG")
        if url:
            if not _reachable(url):
                _why = f"$JOBQ_TEST_PG={url} does not answer"
                raise Unavailable(_why)
            _server = Server(url, "$JOBQ_TEST_PG")
            return _server
        bindir = _bindir()
        if bindir:
            try:
                _server = _throwaway(bindir)
                return _server
            except Unavailable as e:
                reasons.append(f"a throwaway cluster failed ({e})")
        else:
            reasons.append("no PostgreSQL server binaries (initdb, pg_ctl)")
        if _reachable(FALLBACK_URL):
            _server = Server(FALLBACK_URL, "the server at 127.0.0.1:5432")
            return _server
        reasons.append("nothing answers at 127.0.0.1:5432")
        _why = ("no PostgreSQL for the tests: set $JOBQ_TEST_PG, or install the server "
                "binaries, or run one at 127.0.0.1:5432 (" + "; ".join(reasons) + ")")
        raise Unavailable(_why)


_clusters: dict[tuple[tuple[str, str], ...], Server] = {}


def own_cluster(settings: dict[str, str] | None = None) -> Server:
    """A throwaway cluster for one test alone (which may stop and start it), with these
    server settings; the caller stops it. ``Unavailable`` without the server binaries."""
    bindir = _bindir()
    if bindir is None:
        raise Unavailable("no PostgreSQL server binaries (initdb, pg_ctl) for a "
                          "cluster of the test's own")
    return _throwaway(bindir, settings)


def cluster(**settings: str) -> Server:
    """A throwaway cluster of its own with these server settings (``autovacuum="off"``),
    started once per process for each set of settings, stopped at exit; ``Unavailable``
    without the server binaries (a server of ``$JOBQ_TEST_PG`` cannot take settings)."""
    key = tuple(sorted(settings.items()))
    with _lock:
        if key not in _clusters:
            _clusters[key] = own_cluster(settings)
        return _clusters[key]


def wait_until_up(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not _reachable(url):
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} did not come back within {timeout}s")
        time.sleep(0.1)
