"""PgSystem: a system of peers_pg.py's section on the PostgreSQL server of --pg-url, each
measurement on a database of its own (created for it, dropped after), and the two ways a
peer's own worker drains: until its burst ends (RunsItsOwnWorker: procrastinate,
pgqueuer) or until every job has run, when the bench stops it (StopsWhenDrained: awa,
chancy, Oban, which have no burst mode)."""
from __future__ import annotations

import atexit
import hashlib
import time
from urllib.parse import urlsplit, urlunsplit

from harness.drained import Drained
from harness.system import System

SERVER_URL = "postgresql://postgres@127.0.0.1:5432/postgres"  # set by --pg-url (use_server)
PROMISES_TITLE = "what each promises when a worker goes silent mid-job:"
SLOTS = 8  # the async peers' jobs at once: jobq's default slots (procrastinate's default is 1)

RAN: list[int] = []  # what this process's no-op handlers saw
ENQUEUED: dict[str, int] = {}  # jobs each enqueue measurement stored, by its directory


def use_server(url: str) -> None:
    """The server the section measures on (``--pg-url``); set before any process forks."""
    global SERVER_URL
    SERVER_URL = url


def psycopg():
    import psycopg as module
    return module


def db_url(name: str) -> str:
    return urlunsplit(urlsplit(SERVER_URL)._replace(path=f"/{name}"))


def db_name(d: str) -> str:
    """The database that stands for the harness's directory ``d``."""
    return "peers_" + hashlib.sha1(d.encode()).hexdigest()[:12]


def admin(sql: str) -> None:
    with psycopg().connect(SERVER_URL, autocommit=True) as c:
        c.execute(sql)


def server_available() -> tuple[bool, str]:
    try:
        with psycopg().connect(SERVER_URL, connect_timeout=3) as c:
            c.execute("SELECT 1")
        return True, ""
    except Exception as e:  # noqa: BLE001 - one line in the report
        return False, f"no PostgreSQL server at {SERVER_URL} ({str(e).strip().splitlines()[0]})"


def server_settings() -> dict:
    with psycopg().connect(SERVER_URL) as c:
        return dict(c.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN ('server_version', 'fsync', "
            "'synchronous_commit', 'shared_buffers', 'autovacuum', 'max_connections')").fetchall())


def header() -> tuple[str, dict]:
    """The line above the section's table, and the server's settings for the JSON."""
    s = server_settings()
    return (f"PostgreSQL {s.get('server_version')} at {SERVER_URL} (fsync={s.get('fsync')}, "
            f"synchronous_commit={s.get('synchronous_commit')}, autovacuum="
            f"{s.get('autovacuum')}), same machine"), s


def in_fork(fn, *args):
    """fn(*args) in a forked child, its result (or its error) sent back: for a library whose
    runtime does not survive a fork (awa's tokio runtime: a child forked after the parent
    used it hangs), so that the bench's own process never starts it and the drains'
    forked workers each start a fresh one."""
    import multiprocessing as mp
    import traceback

    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def child():
        try:
            send.send(("ok", fn(*args)))
        except BaseException:  # noqa: BLE001 - sent back whole
            send.send(("error", traceback.format_exc()))

    p = ctx.Process(target=child, daemon=True)
    p.start()
    send.close()
    try:
        status, value = recv.recv()
    except EOFError:
        p.join()
        raise RuntimeError(f"{getattr(fn, '__name__', fn)} died in its child "
                           f"(exit code {p.exitcode})") from None
    p.join()
    if status != "ok":
        raise RuntimeError(value[-2000:])
    return value


class PgSystem(System):
    """A system on the PostgreSQL server: the harness's directory ``d`` names a database."""

    section = "pg"
    baseline = "raw-PG"
    promises = ""

    def available(self):
        try:
            psycopg()
        except ImportError as e:
            return False, f"psycopg is not installed ({e}): pip install 'jobq[postgres]'"
        return server_available()

    def url(self, d: str) -> str:
        return db_url(db_name(d))

    def create(self, d: str) -> None:
        admin(f'CREATE DATABASE "{db_name(d)}"')
        self.install(self.url(d))

    def install(self, url: str) -> None:
        """Create the system's tables in the new database."""

    def copy_from(self, src: str, d: str) -> None:
        admin(f'CREATE DATABASE "{db_name(d)}" TEMPLATE "{db_name(src)}"')

    def discard(self, d: str) -> None:
        admin(f'DROP DATABASE IF EXISTS "{db_name(d)}" WITH (FORCE)')

    def after_enqueue(self, d: str) -> None:
        pass

    def count(self, d: str, sql: str):
        try:
            with psycopg().connect(self.url(d)) as c:
                return c.execute(sql).fetchone()[0]
        except Exception:  # noqa: BLE001 - the cross-check is best effort
            return None

    def settings(self, h) -> dict:
        return {}


class InstalledOnce(PgSystem):
    """A peer whose schema takes seconds to install (awa's migrations, a child process for
    Oban): installed once a run into a template database, which each measurement's
    database copies (outside every timed window, as for the other peers)."""

    _template: str | None = None

    def create(self, d: str) -> None:
        if self._template is None:
            name = db_name(f"template-{self.name}-{time.time()}")
            admin(f'CREATE DATABASE "{name}"')
            atexit.register(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            self.install(db_url(name))
            self._template = name
        admin(f'CREATE DATABASE "{db_name(d)}" TEMPLATE "{self._template}"')


class RunsItsOwnWorker(PgSystem):
    """A peer drained by its own worker: the first claim runs it until the queue is empty,
    then hands out the keys its no-op handler saw."""

    workloads = ("enqueue", "batch", "drain1", "drain4")
    supports_batch = True

    def open_worker(self, d, wid):
        return {"d": d, "ran": None}

    def run_worker(self, url: str) -> None:
        raise NotImplementedError

    def claim(self, h):
        if h["ran"] is None:
            del RAN[:]
            self.run_worker(self.url(h["d"]))
            h["ran"] = iter(list(RAN))
        key = next(h["ran"], None)
        return None if key is None else (key, key)

    def complete(self, h, ctx):
        return True


class StopsWhenDrained(InstalledOnce, RunsItsOwnWorker):
    """A peer whose worker has no burst mode: its drain ends when the last of the n jobs
    has run (``Drained``, shared by the drain's processes, made in ``copy_from`` before
    they fork), and each process's worker is stopped after that, outside the window. A
    subclass gives connect / send / send_many / disconnect for the enqueue side (the jobs
    each enqueue stored are counted, for the drains of its copies); its handler calls
    ``ran(i)``."""

    _drained: Drained | None = None

    def connect(self, url: str):
        raise NotImplementedError

    def send(self, client, i: int) -> None:
        raise NotImplementedError

    def send_many(self, client, ids: list[int]) -> None:
        raise NotImplementedError

    def disconnect(self, client) -> None:
        pass

    def open(self, d):
        return {"d": d, "count": 0, "client": self.connect(self.url(d))}

    def enqueue(self, h, i):
        self.send(h["client"], i)
        h["count"] += 1

    def enqueue_batch(self, h, ids):
        ids = list(ids)
        self.send_many(h["client"], ids)
        h["count"] += len(ids)

    def close(self, h):
        ENQUEUED[h["d"]] = h["count"]
        self.disconnect(h["client"])

    def copy_from(self, src: str, d: str) -> None:
        super().copy_from(src, d)
        self._drained = Drained(ENQUEUED[src])

    def ran(self, i: int) -> None:
        RAN.append(i)
        self._drained.ran(i)

    def wait_drained(self) -> bool:
        """In a worker process, until every job has run (True) or none for a while."""
        return self._drained.wait()

    def drained_at(self, h):
        return self._drained.at.value if self._drained.done.is_set() else None
