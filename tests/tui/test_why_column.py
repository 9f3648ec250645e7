"""The WHY column of the Running and All views: shown from 120 columns, a short reason per
row that agrees with ``jobq why``, decided from what one refresh read (never ``Queue.why``
per row), on SQLite and on PostgreSQL."""
from dataclasses import replace

import pytest

from conftest import make_app, settle
from jobq_core import Job, JobStatus, Queue, Rate, WorkerState
from jobq_core.store import controls
from jobq_core.testing import FakeClock
from jobq_core.presentation.views.filters import Filter
from jobq_tui.source import Source
from jobq_tui.views import VIEWS
from jobq_core.presentation.views.cells import Timed
from jobq_core.presentation.views.why import running_text

T0 = 1_767_225_600.0
SERVED = ["one", "keyed", "ordered", "api", "stopped", "flaky", "default"]  # not "orphan"

EXPECTED = {
    "limited_running": "running",
    "limited": "queue_limit 1/1",
    "key_running": "running, lease over",  # a 30 s lease, claimed a minute ago
    "key": "key_held 1/1",
    "ordered_first": "ready",
    "ordered_second": "key_held after {ordered_first}",
    "rate_done": "succeeded",
    "rated": "rate_limit in 50s",
    "paused": "paused",
    "scheduled": "scheduled in 20s",
    "retry": "retry 2/3 in 4m",
    "waiting": "waiting 1",
    "orphan": "no_worker",
    "ready": "ready",
    "dead": "dead",
}


@pytest.fixture(autouse=True)
def _controls_read_at_every_claim(monkeypatch):
    monkeypatch.setattr(controls, "TTL", 0.0)


def build(database) -> tuple[FakeClock, dict[str, int]]:
    """A job held back by each reason the column has, as of ``T0`` (the clock returned)."""
    clock = FakeClock(T0 - 60)
    ids: dict[str, int] = {}
    with Queue(database, clock=clock, max_attempts=3) as q:
        q.set_limit("one", concurrency=1)
        q.set_limit("keyed", key_concurrency=1)
        q.set_limit("ordered", ordered=True)
        q.set_limit("api", rate=Rate(1, 60.0))
        ids["limited_running"] = q.enqueue("k", queue="one")
        q.claim("w1", queues=["one"], lease=600)
        ids["limited"] = q.enqueue("k", queue="one")
        ids["key_running"] = q.enqueue("k", queue="keyed", key="c7")
        q.claim("w1", queues=["keyed"], lease=30)
        ids["key"] = q.enqueue("k", queue="keyed", key="c7")
        ids["ordered_first"], ids["ordered_second"] = q.enqueue_many(
            [{"kind": "k", "queue": "ordered", "key": "o1"}] * 2)
        ids["retry"] = q.enqueue("k", queue="flaky")
        job = q.claim("w1", queues=["flaky"])
        q.fail(job.id, job.token, "TimeoutError: try again", retry_in=300)
        ids["dead"] = q.enqueue("k", queue="flaky", max_attempts=1)
        job = q.claim("w1", queues=["flaky"])
        q.fail(job.id, job.token, "ValueError: bad")
        clock.set(T0 - 10)
        ids["rate_done"] = q.enqueue("k", queue="api")
        job = q.claim("w1", queues=["api"])
        q.complete(job.id, job.token)  # the window (1 job a minute) is full until T0 + 50
        ids["rated"] = q.enqueue("k", queue="api")
        q.pause("stopped")
        ids["paused"] = q.enqueue("k", queue="stopped")
        ids["scheduled"] = q.enqueue("k", delay=30)
        ids["waiting"] = q.enqueue("k", after=[ids["paused"]])
        ids["orphan"] = q.enqueue("k", queue="orphan")
        ids["ready"] = q.enqueue("k")
        clock.set(T0 - 1)
        q.register_worker("w1", host="h", pid=1, queues=SERVED, concurrency=4,
                          beat_interval=10.0)
        clock.set(T0)
    return clock, ids


def expected(ids: dict[str, int]) -> dict[int, str]:
    return {ids[name]: text.format(**ids) for name, text in EXPECTED.items()}


def why_cells(app) -> dict[int, str]:
    """The WHY cell of every row of the table shown, by job id."""
    t = app.table()
    labels = [c.label for c in t.model.columns]
    assert "WHY" in labels, labels
    at, col = labels.index("ID"), labels.index("WHY")
    rows = [t.get_row_at(i) for i in range(t.row_count)]
    return {int(r[at].plain.lstrip("⊘")): r[col].plain for r in rows}


async def shown(database, clock, size=(130, 40)) -> tuple[dict[int, str], dict[int, str]]:
    """The WHY cells of the All view and of the Running view."""
    app = make_app(database, FakeClock(clock.now()))
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        every = why_cells(app)
        await pilot.press("1")
        await settle(pilot)
        running = why_cells(app)
    app.source.close()
    return every, running


def agrees_with_jobq_why(database, clock, cells: dict[int, str]) -> None:
    """Each cell starts with the reason ``jobq why`` gives."""
    with Queue(database, clock=FakeClock(clock.now())) as q:
        assert {i: q.why(i).reason for i in cells} == {i: c.split()[0].rstrip(",")
                                                       for i, c in cells.items()}


def test_the_all_views_rows_say_why_each_job_waits_as_jobq_why_does(tmp_path):
    db = tmp_path / "jobs.db"
    clock, ids = build(db)
    view = VIEWS["all"]
    source = Source(db, clock=clock, read_only=True)
    source.open()
    try:
        rows = view.rows(source.poll(view, Filter()), wide=True, beat=10.0)
    finally:
        source.close()
    col = [c.key for c in view.columns(False, True)].index("why")
    cells = {r.job_id: r.cells[col].at(clock.now()).plain for r in rows}
    assert cells == expected(ids)
    agrees_with_jobq_why(db, clock, cells)


@pytest.mark.slow  # a pilot session through two views: seconds
async def test_the_monitor_shows_the_why_column_at_130_columns(tmp_path):
    db = tmp_path / "jobs.db"
    clock, ids = build(db)
    every, running = await shown(db, clock)
    assert every == expected(ids)
    assert running == {ids["limited_running"]: "running", ids["key_running"]: "running, lease over"}
    agrees_with_jobq_why(db, clock, every)


@pytest.mark.slow  # a pilot session through two views: seconds
async def test_the_why_column_is_the_same_on_postgresql(pg_url):
    clock, ids = build(pg_url)
    every, running = await shown(pg_url, clock)
    assert every == expected(ids)
    assert running == {ids["limited_running"]: "running", ids["key_running"]: "running, lease over"}
    agrees_with_jobq_why(pg_url, clock, every)


@pytest.mark.slow  # a pilot session through two views at three sizes: seconds
async def test_the_why_column_appears_from_120_columns_and_80x24_is_unchanged(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        for size, shown_ in (((80, 24), False), ((119, 40), False), ((120, 40), True)):
            await pilot.resize_terminal(*size)
            for key in ("1", "6"):
                await pilot.press(key)
                await settle(pilot)
                table = app.table()
                labels = [c.label for c in table.model.columns]
                assert ("WHY" in labels) is shown_, (size, labels)
                assert all(len(table.get_row_at(i)) == len(labels)
                           for i in range(table.row_count))
                if not shown_:  # the columns of the narrow layout, as they were
                    assert labels == (["ID", "KIND", "QUEUE", "WORKER", "TRY", "RUNTIME", "LEASE"]
                                      if key == "1" else
                                      ["ID", "STATUS", "KIND", "QUEUE", "TRY", "AGE"])
    app.source.close()


def test_a_refresh_reads_holds_once_for_the_page_and_never_asks_why(tmp_path, monkeypatch):
    db = tmp_path / "jobs.db"
    clock, ids = build(db)
    calls = []
    monkeypatch.setattr(Queue, "why", lambda *a: pytest.fail("Queue.why read per row"))
    holds = Queue.holds
    monkeypatch.setattr(Queue, "holds", lambda q, job_ids: calls.append(list(job_ids))
                        or holds(q, job_ids))
    source = Source(db, clock=FakeClock(clock.now()), read_only=True)
    source.open()
    try:
        snap = source.poll(VIEWS["all"], Filter())
        source.poll(VIEWS["running"], Filter())
    finally:
        source.close()
    assert calls == [sorted({ids["key"], ids["ordered_first"], ids["ordered_second"],
                             ids["waiting"]}, reverse=True)]  # the keyed pending, the waiting
    rows = VIEWS["all"].rows(snap, wide=True, beat=10.0)
    assert len(rows) == len(EXPECTED)


def test_a_workers_beat_keeps_the_rows_and_a_silent_worker_turns_them_to_no_worker(tmp_path):
    """A beat rebuilds no row of a job that is not running (whether a worker serves its
    queue is asked when its cell is drawn), and a worker that falls silent, with nothing
    written, shows at once."""
    db = tmp_path / "jobs.db"
    clock, ids = build(db)
    view = VIEWS["all"]
    running = {ids["limited_running"], ids["key_running"]}
    source = Source(db, clock=clock, read_only=True)
    source.open()
    try:
        before = source.poll(view, Filter())
        first = view.rows(before, wide=True, beat=10.0)
        clock.advance(5)
        with Queue(db, clock=clock) as q:
            assert q.beat_worker("w1")
        after = source.poll(view, Filter())
        second = view.rows(after, wide=True, beat=10.0)
    finally:
        source.close()
    assert before.workers[0].last_seen < after.workers[0].last_seen == clock.now()  # beat read
    kept = [(a, b) for a, b in zip(first, second) if a.job_id not in running]
    assert len(kept) == len(EXPECTED) - 2 and all(a is b for a, b in kept)
    col = [c.key for c in view.columns(False, True)].index("why")
    ready = next(r for r in second if r.job_id == ids["ready"]).cells[col]
    assert isinstance(ready, Timed)
    assert ready.at(clock.now()).plain == "ready"
    assert ready.at(clock.now() + 3600).plain == "no_worker"  # silent for an hour: lost


def test_a_running_jobs_cell_is_about_its_lease_and_its_worker():
    j = Job(id=1, kind="k", queue="q", payload=None, priority=0, status=JobStatus.RUNNING,
            attempts=1, max_attempts=3, run_at=T0, lease_until=T0 + 30, worker="w1", token=1,
            result=None, error=None, created_at=T0, started_at=T0, finished_at=None)
    assert running_text(j, T0, WorkerState.OK).plain == "running"
    assert running_text(j, T0, None).plain == "running"  # a worker no longer registered
    assert running_text(j, T0, WorkerState.LATE).plain == "running, worker late"
    assert running_text(j, T0, WorkerState.LOST).plain == "running, worker lost"
    assert running_text(j, T0 + 30, WorkerState.LOST).plain == "running, lease over"
    assert running_text(replace(j, lease_until=None), T0 + 99, None).plain == "running"
