"""Fixtures for the monitor's tests: a fixture database at a fixed clock, and the app on it."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import fixture_db  # noqa: E402

from jobq_tui.app import MonitorApp  # noqa: E402
from jobq_tui.source import Source  # noqa: E402


@pytest.fixture(scope="session")
def fixture_template(tmp_path_factory):
    """Built once per session; tests get a copy so actions do not leak between them."""
    path = tmp_path_factory.mktemp("template") / "jobs.db"
    clock = fixture_db.build(path)
    return path, clock.now()


@pytest.fixture
def db(fixture_template, tmp_path):
    import shutil

    src, _ = fixture_template
    dst = tmp_path / "jobs.db"
    shutil.copy(src, dst)
    return dst


@pytest.fixture
def clock(fixture_template):
    from jobq_core.testing import FakeClock

    return FakeClock(fixture_template[1])


def make_app(path, clock, *, read_only=False, interval=3600.0, **kw) -> MonitorApp:
    """An app that polls once at start and then only when asked (a long interval), so
    tests and snapshots do not depend on timing."""
    source = Source(path, clock=clock, read_only=read_only)
    source.open()
    return MonitorApp(source, interval=interval, clock=clock, **kw)


async def focus_lands(pilot, widget_id: str) -> None:
    """Wait until the widget with this id has the focus (it moves a few messages after the
    key that asks for it, later still on a busy machine), so typed keys reach it."""
    for _ in range(500):
        focused = pilot.app.focused
        if focused is not None and focused.id == widget_id:
            return
        await pilot.pause(0.01)
    raise AssertionError(f"#{widget_id} never got the focus (it is on {pilot.app.focused!r})")


async def settle(pilot) -> None:
    """Wait until the poll (and any action or detail read) in flight has landed: idle
    twice in a row, so a message still on its way (an Input's Submitted) is not missed."""
    from textual.worker import WorkerCancelled

    app = pilot.app
    quiet = 0
    for _ in range(200):
        try:
            await app.workers.wait_for_complete()
        except WorkerCancelled:  # a newer preview replaced an older one: fine
            pass
        await pilot.pause()
        if not app._polling and not app.workers:
            quiet += 1
            if quiet >= 3:
                return
            await pilot.pause(0.01)
        else:
            quiet = 0
    raise AssertionError("the app did not settle")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run ``async def`` tests on a fresh event loop (no async plugin needed)."""
    import asyncio
    import inspect

    if inspect.iscoroutinefunction(pyfuncitem.obj):
        names = pyfuncitem._fixtureinfo.argnames
        asyncio.run(pyfuncitem.obj(**{n: pyfuncitem.funcargs[n] for n in names}))
        return True
    return None
