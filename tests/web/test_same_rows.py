"""The monitor and the web dashboard show the same rows for the same database: each view's
rows as the monitor builds them (its ``Source``'s snapshot) and as a page does
(``reading.take``), compared cell by cell at one time."""
from __future__ import annotations

import pytest

from jobq_core.presentation.views import VIEWS
from jobq_core.presentation.views.cells import shown_at
from jobq_core.presentation.views.filters import Filter, parse_filter
from jobq_core.presentation.views.reading import take
from jobq_tui.source import Source
from jobq_web import create_app
from jobq_web.html import row_id
from jobq_web.pages import view_page


def shown(rows, now):
    return [(r.key, r.job_id, tuple(shown_at(c, now).plain for c in r.cells)) for r in rows]


def monitor_rows(db, clock, name, filt, grouped):
    source = Source(db, clock=clock, read_only=True)
    source.open()
    try:
        snap = source.poll(VIEWS[name], filt, grouped=grouped, force=True)
    finally:
        source.close()
    return VIEWS[name].rows(snap, wide=True, beat=10.0), snap.read_at


@pytest.mark.parametrize("name", list(VIEWS))
@pytest.mark.parametrize("text", ["", "queue:billing", "INV"])
def test_the_monitor_and_the_web_show_the_same_rows(db, clock, queue, seeded, name, text):
    filt = parse_filter(text)
    for grouped in ((True, False) if VIEWS[name].groups else (True,)):
        tui, at = monitor_rows(db, clock, name, filt, grouped)
        web = VIEWS[name].rows(take(queue, VIEWS[name], filt, grouped=grouped, now=at),
                               wide=True, beat=10.0)
        assert shown(tui, at) == shown(web, at), (name, text, grouped)


def test_a_page_shows_the_rows_the_view_model_built(db, seeded, queue):
    """The HTML carries each row of ``View.rows`` (what the test above compares), in order."""
    from starlette.testclient import TestClient
    page = view_page(queue, "all", "")
    with TestClient(create_app(db)) as c:
        html = c.get("/all").text
    keys = [row_id(r.key) for r in page.rows]
    assert keys and [k for k in keys if f'data-key="{k}"' in html] == keys
    positions = [html.index(f'data-key="{k}"') for k in keys]
    assert positions == sorted(positions)


def test_the_filter_text_means_the_same_to_both(seeded):
    assert parse_filter("queue:mail kind:ok x") == Filter(
        queue="mail", kind="ok", words=("x",), text="queue:mail kind:ok x")
