"""Opening files: what jobq accepts, what it refuses, and that a refused file is untouched."""
import os
import sqlite3
import stat

import pytest

from jobq_core import (
    DatabaseError, DatabaseUnavailable, ForeignTable, JobqError, NotADatabase, Queue, Rate,
    SchemaTooNew,
)
from jobq_core.store import sql
from jobq_core.store.sqlite.schema import RATE_TRIGGER, SCHEMA_VERSION


def _snapshot(path):
    return {p: open(p, "rb").read() for p in (path, f"{path}-wal", f"{path}-shm")
            if os.path.exists(p)}


def test_a_new_database_and_its_wal_files_are_owner_only(db_path):
    q = Queue(db_path)
    q.enqueue("k")
    for p in (db_path, f"{db_path}-wal", f"{db_path}-shm"):
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o600, p
    q.close()


def test_the_database_runs_in_wal_mode_with_the_chosen_synchronous_level(db_path):
    q = Queue(db_path)
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert q.store._conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    q.close()
    q = Queue(db_path, synchronous="full")
    assert q.store._conn.execute("PRAGMA synchronous").fetchone()[0] == 2
    q.close()
    with pytest.raises(ValueError, match="synchronous"):
        Queue(db_path, synchronous="sometimes")


def test_checkpoints_come_every_4_mib_of_wal_whatever_the_page_size(db_path, tmp_path):
    q = Queue(db_path)  # jobq's own 1 KiB pages
    assert q.store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 4096
    q.close()
    other = str(tmp_path / "app.db")
    conn = sqlite3.connect(other)
    conn.execute("PRAGMA page_size=8192")
    conn.execute("CREATE TABLE app(x)")
    conn.close()
    q = Queue(other)
    assert q.store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
    q.close()


def test_a_file_jobq_created_records_its_schema_version_in_user_version(db_path):
    Queue(db_path).close()
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA page_size").fetchone()[0] == 1024  # small rows, small pages
    Queue(db_path).close()  # reopening migrates nothing and keeps the data
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"these are my notes, not a database\n" * 200)
    before = _snapshot(path)
    with pytest.raises(NotADatabase, match="not an SQLite database"):
        Queue(path)
    assert _snapshot(path) == before


def test_a_jobq_database_from_a_newer_version_is_refused_and_left_untouched(db_path):
    Queue(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE jobq_meta SET value='99' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    before = _snapshot(db_path)
    with pytest.raises(SchemaTooNew, match="schema version 99"):
        Queue(db_path)
    assert _snapshot(db_path) == before


def test_a_table_with_jobqs_name_that_jobq_did_not_create_is_refused(db_path):
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE jobq_jobs(id INTEGER PRIMARY KEY, what TEXT)")
    conn.execute("INSERT INTO jobq_jobs(what) VALUES ('mine')")
    conn.commit()
    conn.close()
    before = _snapshot(db_path)
    with pytest.raises(ForeignTable, match="jobq_jobs"):
        Queue(db_path)
    assert _snapshot(db_path) == before


def test_jobq_tables_can_live_in_an_applications_own_database(db_path):
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO users(name) VALUES ('ada')")
    conn.execute("PRAGMA user_version=7")
    conn.commit()
    q = Queue(db_path)
    q.enqueue("welcome", {"user": 1})
    q.close()
    assert conn.execute("SELECT name FROM users").fetchall() == [("ada",)]
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 7  # the application's own
    assert conn.execute("PRAGMA page_size").fetchone()[0] == 4096  # the application's layout
    assert Queue(db_path).list()[0].kind == "welcome"


def test_read_only_mode_cannot_write_and_never_creates_a_file(db_path, tmp_path):
    missing = tmp_path / "missing.db"
    with pytest.raises(DatabaseError, match="no such database file"):
        Queue(missing, read_only=True)
    with pytest.raises(DatabaseError):
        Queue(missing, create=False)
    assert not missing.exists()
    writer = Queue(db_path)
    job_id = writer.enqueue("k")
    reader = Queue(db_path, read_only=True)
    assert reader.get(job_id).kind == "k"
    with pytest.raises(JobqError, match="read-only"):
        reader.enqueue("k")
    assert len(writer.list()) == 1


def test_read_only_mode_refuses_a_database_without_jobq_tables(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t(x)")
    conn.commit()
    with pytest.raises(DatabaseError, match="not a jobq database"):
        Queue(path, read_only=True)


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(DatabaseError, match="directory"):
        Queue(tmp_path)


def _in_read_only_mount(directory, code):
    """Run ``code`` in a child that sees ``directory`` mounted read-only (root and a mount
    namespace are needed: file modes alone do not stop root)."""
    import subprocess
    import sys

    script = (f"mount --bind {directory} {directory} && "
              f"mount -o remount,ro,bind {directory} && exec {sys.executable} -c \"$0\"")
    try:
        return subprocess.run(["unshare", "-m", "sh", "-c", script, code],
                              capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        pytest.skip("unshare is not available")


def test_a_database_in_a_read_only_directory_is_shown_read_only_and_refused_for_writing(tmp_path):
    q = Queue(tmp_path / "jobs.db")
    q.enqueue("visible")
    q.close()  # the last connection removes -wal and -shm
    code = ("from jobq_core import Queue, DatabaseUnavailable\n"
            f"q = Queue({str(tmp_path / 'jobs.db')!r}, read_only=True)\n"
            "print([j.kind for j in q.list()], q.frozen)\n"
            "try:\n"
            f"    Queue({str(tmp_path / 'jobs.db')!r})\n"
            "except DatabaseUnavailable as e:\n"
            "    print('refused:', e)\n")
    result = _in_read_only_mount(tmp_path, code)
    if "Operation not permitted" in result.stderr or "mount:" in result.stderr:
        pytest.skip(f"no mount namespace here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "['visible'] True"
    assert lines[1].startswith("refused:") and "read-only" in lines[1]


def _damaged_copy(tmp_path, damage):
    path = tmp_path / "damaged.db"
    q = Queue(path)
    q.enqueue_many([("k", {"n": i, "pad": "x" * 200}) for i in range(3000)])
    q.close()
    data = bytearray(path.read_bytes())
    path.write_bytes(damage(data))
    return path


@pytest.mark.parametrize("damage", [
    pytest.param(lambda d: d[: len(d) // 2], id="truncated"),
    pytest.param(lambda d: d[:100] + os.urandom(len(d) - 100), id="random pages"),
    pytest.param(lambda d: b"\0" * 16 + d[16:], id="header wiped"),
])
def test_a_truncated_or_corrupted_file_gives_a_jobq_error_never_a_raw_sqlite_one(tmp_path, damage):
    path = _damaged_copy(tmp_path, damage)
    with pytest.raises(NotADatabase, match="corrupt"):
        q = Queue(path)
        try:  # the header may still read fine: the damage shows when the pages are read
            q.list(limit=5000)
            q.stats()
        finally:
            q.close()


MOUNTS = """\
/dev/vda / ext4 rw,relatime 0 0
server:/export /mnt/shared nfs4 rw,relatime 0 0
//nas/jobs /mnt/nas cifs rw 0 0
tmpfs /mnt/shared/local tmpfs rw 0 0
"""


def test_the_filesystem_of_a_path_is_read_from_the_longest_matching_mount_point():
    from jobq_core.store.sqlite import filesystem_type

    assert filesystem_type("/mnt/shared/app/jobs.db", MOUNTS) == "nfs4"
    assert filesystem_type("/mnt/nas/jobs.db", MOUNTS) == "cifs"
    assert filesystem_type("/mnt/shared/local/jobs.db", MOUNTS) == "tmpfs"
    assert filesystem_type("/mnt/sharedish/jobs.db", MOUNTS) == "ext4"


def test_a_database_on_a_local_disk_opens_without_a_network_warning(db_path, recwarn):
    Queue(db_path).close()
    assert not [w for w in recwarn if "network filesystem" in str(w.message)]


def test_a_queue_used_after_a_fork_refuses_instead_of_corrupting_the_file(db_path):
    q = Queue(db_path)
    q.enqueue("k")
    pid = os.fork()
    if pid == 0:  # the child: the inherited connection must not be used
        try:
            q.enqueue("from the child")
        except DatabaseUnavailable as e:
            os._exit(0 if "before a fork" in str(e) else 2)
        os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert [j.kind for j in q.list()] == ["k"]
    q.close()


def test_a_version_1_database_is_migrated_and_its_workers_kept_with_no_recorded_beat(db_path):
    from jobq_core.store.sqlite.schema import MIGRATIONS, _split_statements

    conn = sqlite3.connect(db_path)
    for statement in _split_statements(MIGRATIONS[0]):
        conn.execute(statement)
    conn.executemany("INSERT INTO jobq_meta VALUES (?, ?)",
                     [("application", "jobq"), ("schema_version", "1")])
    conn.execute("INSERT INTO jobq_workers VALUES ('old', 'h', 1, NULL, 2, 0, 0, 0)")
    conn.commit()
    conn.close()
    with pytest.raises(DatabaseError, match="older jobq schema"):
        Queue(db_path, read_only=True)  # a monitor never migrates
    with Queue(db_path) as q:
        [w] = q.workers(forgotten=True)
        assert (w.id, w.beat_interval, w.lease) == ("old", None, None)
        q.register_worker("new", host="h", pid=2, queues=None, concurrency=1,
                          beat_interval=2.0, lease=6.0)
        assert {w.id: w.beat_interval for w in q.workers(forgotten=True)} == {
            "old": None, "new": 2.0}
        # v5 loosened the status CHECK in place: a waiting job fits, a bogus status not
        waiting = q.enqueue("b", after=[q.enqueue("a")])
        assert q.get(waiting).status == "waiting"
        assert q.store.integrity_check() == "ok"
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT value FROM jobq_meta WHERE key='schema_version'"
                        ).fetchone()[0] == str(SCHEMA_VERSION) == "11"
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        conn.execute("UPDATE jobq_jobs SET status='bogus'")
    # v9 spelled the CHECK and the key index's WHERE as equalities: an insert and a
    # completion build no temporary table for an IN list any more (RETURNING builds one)
    for statement, params in ((sql.INSERT_BARE, ("k", "{}", "default", 0, 1.0, 3, 1.0)),
                              (sql.COMPLETE, (None, 1.0, 1, 2))):
        program = [row[1] for row in conn.execute("EXPLAIN " + statement, params)]
        assert "OpenEphemeral" not in program, statement


def _has_rate_trigger(path) -> bool:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT count(*) FROM sqlite_master WHERE type='trigger' "
                            "AND name='jobq_rate_window'").fetchone()[0] == 1
    finally:
        conn.close()


def test_the_rate_window_trigger_exists_only_while_some_queue_has_a_rate_limit(tmp_path):
    """It fires on every claim and completion: a database with no rate limit has none."""
    db = tmp_path / "jobs.db"
    with Queue(db) as q:
        assert not _has_rate_trigger(db)
        q.set_limit("mail", concurrency=3)
        assert not _has_rate_trigger(db)
        q.set_limit("mail", rate="2/s")
        q.set_limit("sms", rate="5/m")
        assert _has_rate_trigger(db)
        q.set_limit("mail")
        assert _has_rate_trigger(db)  # sms still has one
        for _ in range(3):
            q.enqueue("text", queue="sms")
        assert len(q.claim_many("w", 3)) == 3
        assert q.queues()["sms"].rate == Rate(5, 60.0)
        q.set_limit("sms")
        assert not _has_rate_trigger(db)


@pytest.mark.parametrize("limited", [False, True])
def test_version_6_keeps_the_trigger_only_where_a_rate_limit_is_set(tmp_path, limited):
    db = tmp_path / "jobs.db"
    with Queue(db) as q:
        q.set_limit("mail", rate="2/s")
        if not limited:
            q.set_limit("mail", concurrency=1)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executescript(RATE_TRIGGER)  # as version 6 left every database
    conn.execute("ALTER TABLE jobq_jobs DROP COLUMN trace_context")  # version 8's
    conn.execute("UPDATE jobq_meta SET value='6' WHERE key='schema_version'")
    conn.execute("PRAGMA user_version=6")
    conn.close()
    with Queue(db) as q:
        q.enqueue("send", queue="mail")
        q.enqueue("send", queue="mail")
        claimed = q.claim_many("w", 2)
    assert _has_rate_trigger(db) == limited
    assert len(claimed) == (2 if limited else 1)  # 2/s lets both through; concurrency=1 one
    if limited:  # the trigger counted them
        conn = sqlite3.connect(db)
        assert conn.execute("SELECT window_count FROM jobq_queues").fetchone()[0] == 2
        conn.close()
