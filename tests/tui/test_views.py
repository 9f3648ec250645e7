"""The views' contract (columns and rows agree, at both widths, in both Dead layouts) and
the shared formatting they draw with (``jobq_core.presentation.display``, worker states)."""
import pytest

from jobq_core import Job, JobStatus, WorkerInfo, WorkerState
from jobq_core.presentation.display import countdown, duration, job_state, timestamp
from jobq_core.presentation.views.filters import Filter
from jobq_tui.source import Source
from jobq_tui.views import VIEWS
from jobq_core.presentation.views.cells import Cell, Timed


@pytest.mark.parametrize("name", list(VIEWS))
@pytest.mark.parametrize("grouped", [True, False])
@pytest.mark.parametrize("wide", [True, False])
def test_every_row_has_one_cell_and_one_sort_value_per_column(db, clock, name, grouped, wide):
    v = VIEWS[name]
    source = Source(db, clock=clock, read_only=True)
    source.open()
    try:
        snap = source.poll(VIEWS[name], Filter(), grouped=grouped)
    finally:
        source.close()
    columns = v.columns(grouped, wide)
    assert len({c.key for c in columns}) == len(columns)
    rows = v.rows(snap, wide=wide, beat=10.0)
    assert rows, "the fixture has rows for every view"
    assert len({r.key for r in rows}) == len(rows)
    for row in rows:
        assert len(row.cells) == len(row.sort) == len(columns)
        for cell in row.cells:
            assert isinstance(cell.at(clock.now()) if isinstance(cell, Timed) else cell, Cell)


def test_rows_do_not_move_with_the_clock_their_timed_cells_do(db, clock):
    """A second later (or after a re-read that changed nothing) a view hands the table the
    same row objects, which it skips; only the Timed cells it draws show the new time."""
    source = Source(db, clock=clock, read_only=True)
    source.open()
    try:
        snap = source.poll(VIEWS["running"], Filter())
        first = VIEWS["running"].rows(snap, wide=False, beat=10.0)
        clock.advance(1)
        again = source.poll(VIEWS["running"], Filter(), force=True)  # read again: equal records
        second = VIEWS["running"].rows(again, wide=False, beat=10.0)
    finally:
        source.close()
    assert again.running is not snap.running
    assert all(a is b for a, b in zip(first, second)) and len(first) == len(second)
    runtime = [c.label for c in VIEWS["running"].columns(False, False)].index("RUNTIME")
    cell = first[0].cells[runtime]
    assert isinstance(cell, Timed)
    assert cell.at(clock.now()).plain != cell.at(clock.now() - 1).plain


def test_views_without_rows_of_their_own_read_nothing(db, clock):
    source = Source(db, clock=clock, read_only=True)
    source.open()
    try:
        for v in VIEWS.values():
            snap = source.poll(v, Filter(), force=True)
            assert bool(snap.rows) is v.own_rows, v
    finally:
        source.close()


@pytest.mark.parametrize("seconds,shown", [
    (None, "-"), (-5, "0s"), (0, "0s"), (0.35, "350ms"), (42.9, "42s"), (545, "9m05s"),
    (720, "12m"), (3599, "59m"), (11_520, "3h12m"), (187_200, "2d04h"),
])
def test_one_duration_format_rounded_down(seconds, shown):
    assert duration(seconds) == shown


def test_countdowns_read_like_a_clock():
    assert [countdown(s) for s in (-1, 42, 725, 3723)] == ["0:00", "0:42", "12:05", "1:02:03"]


@pytest.mark.parametrize("silent,state", [
    (0, WorkerState.OK), (15, WorkerState.OK), (15.1, WorkerState.LATE),
    (25, WorkerState.LATE), (25.1, WorkerState.LOST),
])
def test_a_worker_is_late_after_one_missed_beat_and_lost_after_two(silent, state):
    w = WorkerInfo("w", "h", 1, None, 1, started_at=0.0, last_seen=100.0)
    assert w.state(100.0 + silent, beat=10.0) is state


@pytest.mark.parametrize("beat_interval,lease,silent,state", [
    (2.0, 6.0, 3.1, WorkerState.LATE),  # its own 2 s beat, not the assumed 10 s
    (2.0, 6.0, 5.1, WorkerState.LOST),
    (None, 6.0, 3.1, WorkerState.LATE),  # no beat recorded: a third of its lease
    (None, 6.0, 5.1, WorkerState.LOST),
    (10.0, 12.0, 12.1, WorkerState.LOST),  # past its lease: its jobs' leases have run out
    (10.0, 12.0, 11.9, WorkerState.OK),
])
def test_a_worker_is_judged_by_the_beat_and_lease_it_recorded_not_the_assumed_beat(
        beat_interval, lease, silent, state):
    w = WorkerInfo("w", "h", 1, None, 1, started_at=0.0, last_seen=100.0,
                   beat_interval=beat_interval, lease=lease)
    assert w.state(100.0 + silent, beat=10.0) is state


def _job(**kw):
    fields = dict(id=1, kind="k", queue="q", payload=None, priority=0,
                  status=JobStatus.PENDING, attempts=0, max_attempts=3, run_at=100.0,
                  lease_until=None, worker=None, token=None, result=None, error=None,
                  created_at=0.0, started_at=None, finished_at=None)
    return Job(**{**fields, **kw})


def test_a_pending_job_is_scheduled_until_due_and_retrying_once_it_failed_due_or_not():
    assert job_state(_job(), now=100.0) == "pending"
    assert job_state(_job(), now=99.0) == "scheduled"
    assert job_state(_job(attempts=1), now=99.0) == "retrying"  # still backing off
    assert job_state(_job(attempts=1), now=100.0) == "retrying"
    assert job_state(_job(status=JobStatus.DEAD, attempts=3), now=100.0) == "dead"


def test_a_moment_is_written_in_utc_to_the_second():
    assert timestamp(1_767_225_600.9) == "2026-01-01 00:00:00 UTC"
    assert timestamp(None) == "-"
