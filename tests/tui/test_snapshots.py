"""Screenshots at 80x24 (the smallest comfortable size) and 200x50 (the rich layout),
of the fixture database at its fixed clock. Update with ``--snapshot-update`` and look
at the SVGs before committing them."""
import pytest

from conftest import focus_lands, make_app, settle

# The layout guard: every view drawn to an SVG and compared, seconds each.
pytestmark = pytest.mark.slow


def app_on(db, clock, monkeypatch, **kw):
    monkeypatch.chdir(db.parent)  # a relative path: the header is the same on every machine
    return make_app("jobs.db", clock, **kw)


def keys(*pressed):
    async def run_before(pilot):
        await settle(pilot)
        for key in pressed:
            await pilot.press(key)
            await settle(pilot)
            if key == "slash":
                await focus_lands(pilot, "filter")
        await pilot.pause(0.2)  # the footer redraws its keys a moment after focus moves
        await settle(pilot)
    return run_before


@pytest.mark.parametrize("name,pressed", [
    ("running", ()),
    ("queues", ("2",)),
    ("workers", ("3",)),
    ("retries", ("4",)),
    ("dead_grouped", ("5",)),
    ("dead_jobs", ("5", "d")),
    ("all", ("6",)),
    ("schedules", ("7",)),
])
def test_views_80x24(snap_compare, db, clock, monkeypatch, name, pressed):
    assert snap_compare(app_on(db, clock, monkeypatch), terminal_size=(80, 24),
                        run_before=keys(*pressed))


@pytest.mark.parametrize("name,pressed", [("running", ()), ("dead_grouped", ("5",)),
                                          ("all", ("6",)), ("queues", ("2",))])
def test_views_200x50(snap_compare, db, clock, monkeypatch, name, pressed):
    assert snap_compare(app_on(db, clock, monkeypatch), terminal_size=(200, 50),
                        run_before=keys(*pressed))


def test_detail_80x24(snap_compare, db, clock, monkeypatch):
    assert snap_compare(app_on(db, clock, monkeypatch), terminal_size=(80, 24),
                        run_before=keys("5", "d", "enter"))


def test_confirm_retry_group_80x24(snap_compare, db, clock, monkeypatch):
    assert snap_compare(app_on(db, clock, monkeypatch), terminal_size=(80, 24),
                        run_before=keys("5", "R"))


def test_confirm_pause_queue_80x24(snap_compare, db, clock, monkeypatch):
    assert snap_compare(app_on(db, clock, monkeypatch), terminal_size=(80, 24),
                        run_before=keys("2", "P"))


def test_help_80x24(snap_compare, db, clock, monkeypatch):
    assert snap_compare(app_on(db, clock, monkeypatch), terminal_size=(80, 24),
                        run_before=keys("question_mark"))


def test_read_only_filtered_80x24(snap_compare, db, clock, monkeypatch):
    app = app_on(db, clock, monkeypatch, read_only=True)
    assert snap_compare(app, terminal_size=(80, 24),
                        run_before=keys("slash", *"queue:mail", "enter"))


def test_too_small(snap_compare, db, clock, monkeypatch):
    assert snap_compare(app_on(db, clock, monkeypatch), terminal_size=(40, 10),
                        run_before=keys())
