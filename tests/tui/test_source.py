"""The data source: reads snapshots read-only, reuses them while nothing changes, reports
a database that is missing, foreign, locked or gone, and acts through its own connection."""
import os
import shutil
import sqlite3

import pytest

from jobq_core import Queue
from jobq_core.presentation.views.filters import Filter, parse_filter
from jobq_tui.source import ReadOnly, Source, SourceError, Unavailable
from jobq_tui.views import VIEWS


def opened(path, clock, **kw):
    s = Source(path, clock=clock, **kw)
    s.open()
    return s


def test_a_missing_path_is_refused_and_not_created(tmp_path, clock):
    path = tmp_path / "nope.db"
    with pytest.raises(SourceError, match="no such database file"):
        Source(path, clock=clock).open()
    assert not path.exists()


def test_a_file_that_is_not_sqlite_is_refused_clearly(tmp_path, clock):
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not a database at all" * 200)
    with pytest.raises(SourceError, match="not an SQLite database"):
        Source(path, clock=clock).open()
    assert path.read_bytes().startswith(b"this is not")


def test_an_sqlite_file_without_jobq_tables_is_refused_clearly(tmp_path, clock):
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    with pytest.raises(SourceError, match="not a jobq database"):
        Source(path, clock=clock).open()
    assert path.stat().st_size == 0


def test_a_directory_is_refused(tmp_path, clock):
    with pytest.raises(SourceError, match="directory"):
        Source(tmp_path, clock=clock).open()


def test_snapshot_has_counts_lists_and_throughput(db, clock):
    snap = opened(db, clock).poll(VIEWS["running"], Filter())
    assert snap.stats.running == 5 and snap.stats.dead == 6
    assert len(snap.running) == 5 and len(snap.workers) == 3
    assert sum(snap.history.succeeded) > 0


def test_each_view_reads_its_own_rows(db, clock):
    s = opened(db, clock)
    assert len(s.poll(VIEWS["retries"], Filter()).rows) == 3
    groups = s.poll(VIEWS["dead"], Filter()).rows
    assert [g.count for g in groups] == [5, 1]  # invoice numbers differ: still one group
    assert groups[0].line.startswith("RuntimeError: billing API returned HTTP 502 for")
    assert groups[0].match == "RuntimeError: billing API returned HTTP 502 for invoice INV-"
    assert s.count_dead(Filter(kind=groups[0].kind, error=groups[0].match)) == 5
    assert len(s.poll(VIEWS["dead"], Filter(), grouped=False).rows) == 6
    assert len(s.poll(VIEWS["all"], parse_filter("status:dead queue:media")).rows) == 1


def test_nothing_is_reread_while_data_version_stands_still(db, clock):
    s = opened(db, clock)
    first = s.poll(VIEWS["running"], Filter())
    clock.advance(1)
    again = s.poll(VIEWS["running"], Filter())
    assert again.read_at == first.read_at and again.checked_at == first.read_at + 1
    with Queue(db, clock=clock) as q:  # another connection commits
        q.enqueue("new")
    assert s.poll(VIEWS["running"], Filter()).read_at == clock.now()


def test_time_alone_forces_a_reread_after_max_reuse(db, clock):
    s = opened(db, clock, max_reuse=5)
    first = s.poll(VIEWS["running"], Filter())
    clock.advance(6)
    assert s.poll(VIEWS["running"], Filter()).read_at > first.read_at


def test_dead_groups_are_regrouped_every_few_seconds_while_the_data_keeps_changing(db, clock):
    """Grouping reads every dead job's error, so it is redone at most every 5 s; but it
    is redone then, however often the database changes in between."""
    s = opened(db, clock)
    s.poll(VIEWS["dead"], Filter())
    seen = []
    with Queue(db, clock=clock) as q:
        for _ in range(7):  # a new dead job every second
            clock.advance(1)
            q.enqueue("resize", {"img": "b.png"}, queue="media", max_attempts=1)
            job = q.claim("w9", queues=["media"])
            q.fail(job.id, job.token, "OSError: disk full")
            snap = s.poll(VIEWS["dead"], Filter())
            seen.append([g.count for g in snap.rows if g.kind == "resize"][0])
    assert seen == [1, 1, 1, 1, 6, 6, 6]
    assert snap.stats.dead == 13  # the counts around the groups are read every time


def test_a_vanished_database_is_reported_and_picked_up_again(db, clock, tmp_path):
    s = opened(db, clock)
    s.poll(VIEWS["running"], Filter())
    aside = tmp_path / "aside.db"
    os.replace(db, aside)
    with pytest.raises(Unavailable, match="gone"):
        s.poll(VIEWS["running"], Filter())
    os.replace(aside, db)
    assert s.poll(VIEWS["running"], Filter()).stats.running == 5


def test_a_database_replaced_by_garbage_is_reported_then_recovers(db, clock, tmp_path):
    s = opened(db, clock)
    s.poll(VIEWS["running"], Filter())
    good = tmp_path / "good.db"
    shutil.copy(db, good)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(f"{db}{suffix}"):
            os.remove(f"{db}{suffix}")
    tmp = tmp_path / "junk"
    tmp.write_bytes(b"garbage" * 1000)
    os.replace(tmp, db)
    with pytest.raises(Unavailable):
        s.poll(VIEWS["running"], Filter())
    os.replace(good, db)
    assert s.poll(VIEWS["running"], Filter(), force=True).stats.dead == 6


def test_a_locked_database_is_reported_as_unavailable(db, clock):
    s = opened(db, clock)
    s.poll(VIEWS["running"], Filter())
    s.close()  # as after a failed read: the next poll opens the file again
    holder = sqlite3.connect(db, isolation_level=None)
    # In exclusive locking mode a WAL writer keeps its lock after the commit and shuts
    # every other connection out, readers included, until it closes.
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("UPDATE jobq_meta SET value=value WHERE key='application'")
    holder.execute("COMMIT")
    try:
        with pytest.raises(Unavailable, match="locked"):
            s.poll(VIEWS["running"], Filter(), force=True)
    finally:
        holder.close()
    assert s.poll(VIEWS["running"], Filter()).stats.running == 5


def test_actions_write_through_their_own_queue_and_read_only_refuses_them(db, clock):
    s = opened(db, clock)
    dead = [j for j in s.poll(VIEWS["dead"], Filter(), grouped=False).rows if j.kind == "build_report"]
    s.retry(dead[0].id)
    assert s.count_dead(Filter()) == 5
    assert s.retry_dead(Filter(kind="build_report")) == 4
    assert s.count_dead(Filter()) == 1
    ro = opened(db, clock, read_only=True)
    with pytest.raises(ReadOnly):
        ro.retry(dead[1].id)
    with pytest.raises(ReadOnly):
        ro.cancel(dead[1].id)


def test_watching_never_creates_side_files_other_than_sqlites_own(tmp_path, db, clock):
    before = set(os.listdir(db.parent))
    opened(db, clock, read_only=True).poll(VIEWS["all"], Filter())
    assert set(os.listdir(db.parent)) - before <= {"jobs.db-wal", "jobs.db-shm"}


def test_a_database_in_a_read_only_directory_is_shown_as_a_frozen_copy(tmp_path):
    """Root ignores file modes, so the directory is made read-only with a mount namespace."""
    import subprocess
    import sys

    from jobq_core import Queue

    q = Queue(tmp_path / "jobs.db")
    q.enqueue("visible")
    q.close()
    code = ("from jobq_tui.source import Source\n"
            "from jobq_core.presentation.views.filters import Filter\n"
            "from jobq_tui.views import VIEWS\n"
            f"s = Source({str(tmp_path / 'jobs.db')!r}, read_only=True)\n"
            "s.open()\n"
            "snap = s.poll(VIEWS['all'], Filter())\n"
            "print(snap.frozen, [j.kind for j in snap.rows])\n")
    script = (f"mount --bind {tmp_path} {tmp_path} && mount -o remount,ro,bind {tmp_path} "
              f"&& exec {sys.executable} -c \"$0\"")
    try:
        result = subprocess.run(["unshare", "-m", "sh", "-c", script, code],
                                capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        pytest.skip("unshare is not available")
    if "mount:" in result.stderr or "Operation not permitted" in result.stderr:
        pytest.skip(f"no mount namespace here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True ['visible']"


def test_the_sparklines_and_rates_count_again_only_the_seconds_that_can_still_change(tmp_path):
    from jobq_core.testing import FakeClock

    clock = FakeClock(1_767_225_600.0)
    path = tmp_path / "jobs.db"
    with Queue(path, clock=clock) as q:
        q.enqueue("k")
    s = opened(path, clock, read_only=True)
    spans = []
    real = s._queue.throughput

    def counted(*, span, bucket):
        spans.append(span)
        return real(span=span, bucket=bucket)

    s._queue.throughput = counted
    try:
        with Queue(path, clock=clock) as q:
            for step in range(80):  # 400 s: past the 300 s the sparklines span
                clock.advance(5 + step % 3)
                for _ in range(step % 4):
                    q.enqueue("k")
                    job = q.claim("w")
                    q.complete(job.id, job.token)
                snap = s.poll(VIEWS["running"], Filter(), force=True)
                assert snap.history == q.throughput(span=300, bucket=1), step
    finally:
        s.close()
    # The first read counts 300 s; each later one the seconds since the last, and two more.
    assert spans[0] == 300 and max(spans[1:]) <= 7 + 2


def _ok_sparkline(snap, now) -> str:
    from jobq_tui.widgets.header import HeaderState, header_text

    text = header_text(snap, now, HeaderState("jobs.db", True, 1.0, True, 10.0), wide=False)
    line = text.plain.split("\n")[2]
    return line.split("/s ok ", 1)[1][:20]  # 20 buckets wide at 80 columns


def _run_jobs(path, clock, n: int) -> None:
    with Queue(path, clock=clock) as q:
        q.enqueue_many([("k", None)] * n)
        for _ in range(n):
            job = q.claim("w")
            q.complete(job.id, job.token)


def test_a_drain_shows_in_the_sparkline_at_once_and_slides_on_while_nothing_changes(tmp_path):
    """Buckets aligned to the read kept a drain in the filling bucket, which is not drawn,
    until a fresh read: up to 30 s while nothing else changed."""
    from jobq_core.testing import FakeClock

    clock = FakeClock(1_767_225_603.0)  # 3 s into a ten-second bucket
    path = tmp_path / "jobs.db"
    Queue(path, clock=clock).close()
    s = opened(path, clock, read_only=True)
    try:
        assert set(_ok_sparkline(s.poll(VIEWS["running"], Filter()), clock.now())) == {"▁"}
        _run_jobs(path, clock, 50)
        clock.advance(0.5)
        snap = s.poll(VIEWS["running"], Filter())
        assert _ok_sparkline(snap, clock.now())[-1] == "█"
        for _ in range(15):  # nothing changes: the snapshot is reused, the buckets slide
            clock.advance(1.0)
            snap = s.poll(VIEWS["running"], Filter())
            assert snap.reused
        assert _ok_sparkline(snap, clock.now())[-2:] == "█ "  # 15 s on: the bucket before
    finally:
        s.close()


def test_the_last_hours_counts_follow_each_read_while_counting_them_is_cheap(tmp_path):
    from jobq_core.testing import FakeClock

    clock = FakeClock(1_767_225_600.0)
    path = tmp_path / "jobs.db"
    Queue(path, clock=clock).close()
    s = opened(path, clock, read_only=True)
    try:
        assert s.poll(VIEWS["running"], Filter()).stats.succeeded_recent == 0
        _run_jobs(path, clock, 3)
        clock.advance(1.0)
        assert s.poll(VIEWS["running"], Filter()).stats.succeeded_recent == 3
    finally:
        s.close()
