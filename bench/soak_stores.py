"""What bench/soak.py reads and does on each store: a database of its own (a SQLite file in
a temporary directory; a PostgreSQL database created on the server and dropped after, or a
cluster of its own started with initdb/pg_ctl), the sizes and vacuum counters sampled each
minute, and the session held open in the hold phase (vacuum held back on PostgreSQL; on
SQLite a read transaction, which keeps the WAL from being checkpointed past it)."""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import uuid
from urllib.parse import urlsplit, urlunsplit

MIB = 1024 * 1024
PG_BINDIRS = "/usr/lib/postgresql/*/bin"

PG_SIZES = """
SELECT coalesce(sum(pg_total_relation_size(relid)), 0), coalesce(sum(pg_relation_size(relid)), 0),
       coalesce(sum(pg_indexes_size(relid)), 0)
FROM pg_stat_user_tables WHERE relname LIKE 'jobq\\_%'
"""
PG_JOBS = """
SELECT n_live_tup, n_dead_tup, autovacuum_count, vacuum_count, autoanalyze_count,
       pg_total_relation_size(relid)
FROM pg_stat_user_tables WHERE relname = 'jobq_jobs'
"""


def _run(cmd: list[str]) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])}... failed: {(r.stderr or r.stdout).strip()[-500:]}")


class OwnCluster:
    """A PostgreSQL cluster of the soak's own (initdb + pg_ctl from PG_BINDIRS, as
    tests/pgserver.py makes the suite's), with ``autovacuum`` on or off and the server's
    other settings at their defaults (fsync on). Removed by ``stop``."""

    def __init__(self, autovacuum: str):
        bins = sorted(glob.glob(PG_BINDIRS), reverse=True)
        self.bindir = shutil.which("pg_ctl") and os.path.dirname(shutil.which("pg_ctl")) or (
            bins[0] if bins else None)
        if not self.bindir:
            raise RuntimeError(f"no initdb/pg_ctl on the PATH or in {PG_BINDIRS}")
        self.top = tempfile.mkdtemp(prefix="jobq-soak-pg-")
        self.run_as: list[str] = []
        if os.geteuid() == 0:  # initdb refuses to run as root
            pw = pwd.getpwnam("postgres")
            os.chown(self.top, pw.pw_uid, pw.pw_gid)
            self.run_as = ["runuser", "-u", "postgres", "--"]
        self.datadir = os.path.join(self.top, "data")
        _run([*self.run_as, os.path.join(self.bindir, "initdb"), "-D", self.datadir,
              "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"])
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        opts = (f"-c port={port} -c listen_addresses=127.0.0.1 -c unix_socket_directories="
                f"{self.top} -c autovacuum={autovacuum}")
        _run([*self.run_as, os.path.join(self.bindir, "pg_ctl"), "-D", self.datadir, "-w",
              "-o", opts, "-l", os.path.join(self.top, "log"), "start"])
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def stop(self) -> None:
        subprocess.run([*self.run_as, os.path.join(self.bindir, "pg_ctl"), "-D", self.datadir,
                        "-m", "immediate", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(self.top, ignore_errors=True)


class PgStore:
    """A database of the soak's own on the server of ``server_url``."""

    name = "postgresql"

    def __init__(self, server_url: str, autovacuum: str, own_cluster: bool):
        import psycopg
        self.psycopg = psycopg
        self.cluster = OwnCluster(autovacuum) if own_cluster else None
        self.server_url = self.cluster.url if self.cluster else server_url
        self.db = f"jobq_soak_{uuid.uuid4().hex[:10]}"
        self._admin(f'CREATE DATABASE "{self.db}"')
        self.url = urlunsplit(urlsplit(self.server_url)._replace(path=f"/{self.db}"))
        self.autovacuum = autovacuum
        self._holder = None

    def _admin(self, sql: str) -> None:
        with self.psycopg.connect(self.server_url, autocommit=True) as c:
            c.execute(sql)

    def prepare(self) -> str:
        """jobq's tables made; with autovacuum off on a shared server, off for them alone."""
        from jobq_core import Queue
        with Queue(self.url) as q:
            q.check()
        with self.psycopg.connect(self.url, autocommit=True) as c:
            server = c.execute("SHOW autovacuum").fetchone()[0]
            if self.autovacuum == "off" and not self.cluster:
                for (table,) in c.execute("SELECT relname FROM pg_stat_user_tables WHERE "
                                          "relname LIKE 'jobq\\_%'").fetchall():
                    c.execute(f'ALTER TABLE "{table}" SET (autovacuum_enabled = off)')
                return f"server autovacuum={server}, off for jobq's tables (storage parameter)"
        where = "a cluster of its own" if self.cluster else self.server_url
        return f"autovacuum={server} ({where})"

    def sample(self) -> dict:
        with self.psycopg.connect(self.url, autocommit=True) as c:
            total, heap, indexes = c.execute(PG_SIZES).fetchone()
            row = c.execute(PG_JOBS).fetchone() or (None,) * 6
            xmin_age = c.execute("SELECT max(age(backend_xmin)) FROM pg_stat_activity").fetchone()[0]
        live, dead, autovacuums, vacuums, autoanalyzes, jobs_total = row
        total, heap, indexes = int(total), int(heap), int(indexes)  # sum() gives numeric
        return {"total_mib": total / MIB, "heap_mib": heap / MIB, "index_mib": indexes / MIB,
                "jobs_table_mib": (jobs_total or 0) / MIB, "live_tup": live, "dead_tup": dead,
                "autovacuum_count": autovacuums, "vacuum_count": vacuums,
                "autoanalyze_count": autoanalyzes, "oldest_xmin_age": xmin_age}

    def hold(self) -> None:
        """An idle-in-transaction session with a transaction id: no row version deleted
        after it started can be vacuumed away while it is open."""
        self._holder = self.psycopg.connect(self.url)
        self._holder.execute("SELECT txid_current()")

    def release(self) -> None:
        if self._holder is not None:
            self._holder.close()
            self._holder = None

    def close(self) -> None:
        self.release()
        try:
            self._admin(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')
        finally:
            if self.cluster:
                self.cluster.stop()


class SqliteStore:
    """A SQLite file in a temporary directory (``db_dir``: where), removed after."""

    name = "sqlite"

    def __init__(self, db_dir: str | None):
        self.dir = tempfile.mkdtemp(prefix="jobq-soak-", dir=db_dir)
        self.url = os.path.join(self.dir, "soak.db")
        self._holder = None

    def prepare(self) -> str:
        from jobq_core import Queue
        with Queue(self.url) as q:
            q.check()
        return "WAL, jobq's defaults (synchronous=NORMAL)"

    def sample(self) -> dict:
        def size(p):
            return os.path.getsize(p) if os.path.exists(p) else 0
        c = sqlite3.connect(self.url, timeout=30)
        try:
            pages = dict(c.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall())
            freelist = c.execute("PRAGMA freelist_count").fetchone()[0]
            page = c.execute("PRAGMA page_size").fetchone()[0]
            indexes = {r[0] for r in c.execute("SELECT name FROM sqlite_schema WHERE type='index'")}
        finally:
            c.close()
        return {"total_mib": size(self.url) / MIB, "wal_mib": size(self.url + "-wal") / MIB,
                "heap_mib": sum(v for k, v in pages.items() if k not in indexes) / MIB,
                "index_mib": sum(v for k, v in pages.items() if k in indexes) / MIB,
                "jobs_table_mib": pages.get("jobq_jobs", 0) / MIB,
                "free_mib": freelist * page / MIB}

    def hold(self) -> None:
        """A read transaction left open: the WAL cannot be checkpointed past its snapshot,
        so it grows while the session is open."""
        self._holder = sqlite3.connect(self.url, isolation_level=None, timeout=30)
        self._holder.execute("BEGIN")
        self._holder.execute("SELECT count(*) FROM jobq_jobs").fetchone()

    def release(self) -> None:
        if self._holder is not None:
            self._holder.execute("COMMIT")
            self._holder.close()
            self._holder = None

    def close(self) -> None:
        self.release()
        shutil.rmtree(self.dir, ignore_errors=True)
