"""Pilot tests: every view, key and action against the fixture database at a fixed clock."""
import pytest
from textual.geometry import Region
from textual.widgets import Footer

from conftest import focus_lands, make_app, settle
from jobq_core import Queue
from jobq_tui.source import Unavailable
from jobq_tui.screens import ConfirmScreen, DetailScreen, HelpScreen


def rows(app):
    t = app.table()
    return [[c.plain for c in t.get_row_at(i)] for i in range(t.row_count)]


def plain(app, selector):
    w = app.query_one(selector)
    return str(w.render()) if not hasattr(w, "content") else str(w.content)


async def type_filter(pilot, text, clear=False):
    """Open the filter box, wait until it has the focus, type, submit."""
    await pilot.press("slash")
    await settle(pilot)
    await focus_lands(pilot, "filter")
    if clear:
        await pilot.press("ctrl+u")
    await pilot.press(*text, "enter")
    await settle(pilot)


async def start(app, pilot):
    await settle(pilot)
    return app


@pytest.mark.parametrize("key,view,first", [
    ("1", "running", ["53", "build_report", "export", "w3 ✗ lost", "1/3", "1:00", "✗ EXPIRED 0:42 ago"]),
    ("2", "queues", ["crm", "", "3", "1", "0", "-"]),
    ("3", "workers", ["w1", "app-1:774", "● ok", "3/4", "1s", "*"]),
    ("4", "retries", ["47", "sync_crm", "crm", "1/3", "in 4m",
                      "TimeoutError: CRM did not answer"]),
    ("5", "dead", ["5", "build_report", "2m ago",
                   "RuntimeError: billing API returned HTTP 502 for invoice INV-1045"]),
    ("6", "all", ["57", "◐ running, worker late", "sync_crm", "crm", "1/3", "5s"]),
    ("7", "schedules", ["nightly_report", "default", "cron 0 3 * * *", "-", "3:00:00"]),
])
@pytest.mark.slow  # seconds of real time (a pilot session, processes or clocks)
async def test_each_view_shows_its_rows(db, clock, key, view, first):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await pilot.press(key)
        await settle(pilot)
        assert app.view == view
        assert rows(app)[0] == first


async def test_states_read_without_colour(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        leases = [r[6] for r in rows(app)]
        assert leases[:2] == ["✗ EXPIRED 0:42 ago", "! 0:03"]
        assert rows(app)[-1][0] == "⊘57"  # cancel requested
        await pilot.press("3")
        await settle(pilot)
        assert [r[2] for r in rows(app)] == ["● ok", "◐ late", "✗ lost"]


async def test_header_shows_counts_rates_lag_and_warnings(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        text = str(app.query_one("#header").render())
        for part in ("jobs.db", "● live", "pending 5", "running 5/6", "retry 3", "sched 4",
                     "dead 6", "lag 20s", "! 1 lost worker", "! 1 expired lease", "/s ok"):
            assert part in text, part


async def test_lease_countdown_ticks_between_refreshes_without_reading(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        read_at = app.snapshot.read_at
        clock.advance(4)
        app._beat()
        await pilot.pause()
        assert [r[6] for r in rows(app)][:2] == ["✗ EXPIRED 0:46 ago", "✗ EXPIRED 0:01 ago"]
        assert app.snapshot.read_at == read_at


async def test_j_k_and_arrows_move_the_cursor(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await pilot.press("j", "j", "down")
        assert app.table().cursor_row == 3
        await pilot.press("k", "up")
        assert app.table().cursor_row == 1


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_enter_opens_the_job_detail_and_esc_goes_back(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await pilot.press("5", "d")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        body = str(app.screen.query_one("#detail-body").render())
        assert '"img": "a.png"' in body and "attempts" in body and "disk full" in body
        await pilot.press("j", "k", "r")
        await settle(pilot)
        await pilot.press("escape")
        assert not isinstance(app.screen, DetailScreen)


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_the_job_detail_follows_the_job_live_and_stops_while_paused(tmp_path, clock):
    path = tmp_path / "live.db"
    with Queue(path, clock=clock) as q:
        q.enqueue("resize", {"img": "a.png"})
        job = q.claim("w1")
    app = make_app(path, clock, interval=0.05)

    async def body_says(text, tries=200):
        for _ in range(tries):
            await pilot.pause(0.02)
            if text in str(app.screen.query_one("#detail-body").render()):
                return True
        return False

    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await pilot.press("1", "enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.job_id == job.id
        assert await body_says("running")
        with Queue(path, clock=clock) as q:
            q.progress(job.id, job.token, 0.5, "half way")
        assert await body_says("half way")  # no key pressed: the screen re-read the job
        await pilot.press("p")  # paused: the screen keeps what it shows
        await settle(pilot)
        assert not app.live
        with Queue(path, clock=clock) as q:
            q.complete(job.id, job.token, {"ok": 1})
        assert not await body_says("succeeded", tries=25)  # 10 refresh intervals
        await pilot.press("r")  # r still reads it once
        assert await body_says("succeeded")


async def test_enter_on_a_dead_group_lists_its_jobs(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await pilot.press("5")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert not app.grouped and len(rows(app)) == 5
        assert app.filter.kind == "build_report"
        assert "kind:build_report" in app.filter.text


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_filter_with_prefixes_and_esc_clears_it(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await type_filter(pilot, "queue:mail")
        await settle(pilot)
        assert {r[2] for r in rows(app)} == {"mail"}
        assert "queue:mail" in str(app.query_one("#status").render())
        await pilot.press("6")
        await type_filter(pilot, "worker:w3", clear=True)
        await settle(pilot)
        assert [r[0] for r in rows(app)] == ["53"]
        await pilot.press("escape")
        await settle(pilot)
        assert app.filter.empty and len(rows(app)) > 1


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_free_words_filter_the_rows_shown(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await type_filter(pilot, "crm")
        await settle(pilot)
        assert [r[0] for r in rows(app)] == ["⊘57"]


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_a_bad_filter_is_explained_and_not_applied(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await type_filter(pilot, 'error:"open')
        await settle(pilot)
        assert "quotation" in str(app.query_one("#status").render())
        assert app.filter.empty


async def test_s_sorts_by_the_next_column_and_S_reverses(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await pilot.press("s")  # by ID
        assert [r[0] for r in rows(app)] == ["50", "53", "54", "55", "⊘57"]
        await pilot.press("S")
        assert [r[0] for r in rows(app)] == ["⊘57", "55", "54", "53", "50"]
        assert "sorted by ID ▼" in str(app.query_one("#status").render())
        assert app.table().render_line(0).text.split()[:2] == ["ID", "▼"]  # in its header
        await pilot.press(*["s"] * 7)  # through the other six columns, and past the last
        assert [r[0] for r in rows(app)] == ["53", "50", "54", "55", "⊘57"]  # as read
        assert "▲" not in app.table().render_line(0).text
        assert "▼" not in app.table().render_line(0).text


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_R_retries_the_selected_dead_job_after_confirmation(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await pilot.press("5", "d")
        await settle(pilot)
        job_id = int(rows(app)[0][0])
        await pilot.press("R")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.press("R", "y")
        await settle(pilot)
        assert len(rows(app)) == 5
    with Queue(db, clock=clock) as q:
        assert q.get(job_id).status == "pending"


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_R_on_a_group_and_A_retry_everything_matching_after_saying_how_many(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await pilot.press("5")
        await settle(pilot)
        await pilot.press("R")
        assert "Retry 5 dead jobs?" in str(app.screen.message)
        await pilot.press("escape")
        await type_filter(pilot, "queue:media")
        await settle(pilot)
        await pilot.press("A")
        assert isinstance(app.screen, ConfirmScreen)
        assert "Retry 1 dead job?" in str(app.screen.message)
        await pilot.press("y")
        await settle(pilot)
        assert "1 dead jobs are pending again" in str(app.query_one("#status").render())
    with Queue(db, clock=clock) as q:
        assert q.count("dead") == 5


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_A_refuses_filter_terms_it_cannot_honour(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await pilot.press("5")
        await type_filter(pilot, "worker:w1")
        await pilot.press("A")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert "remove worker:, status: and key:" in str(app.query_one("#status").render())


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_space_marks_dead_jobs_and_R_retries_only_the_marked_ones(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await pilot.press("5", "d")
        await settle(pilot)
        ids = [int(r[0]) for r in rows(app)]
        await pilot.press("space", "j", "space")  # marks the 1st and 3rd, skips the 2nd
        assert "2 marked" in str(app.query_one("#status").render())
        line = app.table().render_line(1).text
        assert line.startswith("•") and not app.table().render_line(2).text.startswith("•")
        await pilot.press("R")
        assert isinstance(app.screen, ConfirmScreen)
        assert "Retry 2 marked jobs?" in str(app.screen.query_one("#confirm-message").render())
        await pilot.press("y")
        await settle(pilot)
        assert "2 jobs retried" in str(app.query_one("#status").render())
        assert not app.table().marked
    with Queue(db, clock=clock) as q:
        assert [q.get(i).status for i in ids[:3]] == ["pending", "dead", "pending"]


async def test_esc_unmarks_before_it_clears_the_filter_and_read_only_cannot_mark(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await pilot.press("space")
        assert app.table().marked
        await pilot.press("escape")
        assert not app.table().marked and "marks cleared" in str(app.query_one("#status").render())
    app = make_app(db, clock, read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await pilot.press("space")
        assert not app.table().marked


async def test_K_cancels_the_selected_job_after_confirmation(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await pilot.press("K", "y")
        await settle(pilot)
        assert "cancel requested" in str(app.query_one("#status").render())
    with Queue(db, clock=clock) as q:
        assert q.get(53).cancel_requested


async def test_p_pauses_and_resumes_live_refresh(db, clock):
    app = make_app(db, clock, interval=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await pilot.press("p")
        assert not app.live and "PAUSED" in str(app.query_one("#header").render())
        await settle(pilot)
        with Queue(db, clock=clock) as q:
            q.enqueue("new", queue="fresh")
        await pilot.pause(0.3)
        assert "fresh" not in app.snapshot.stats.queues
        await pilot.press("p")
        await settle(pilot)
        assert app.live and "fresh" in app.snapshot.stats.queues


async def test_read_only_hides_and_disables_the_actions(db, clock):
    app = make_app(db, clock, read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        offered = {b.binding.action for b in app.active_bindings.values()}  # the footer's
        assert offered.isdisjoint({"retry", "retry_all", "cancel_job"})
        assert "filter" in offered
        await pilot.press("5", "d", "R", "A", "K")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert "read-only" in str(app.query_one("#header").render())


@pytest.mark.slow  # seconds of real time (a pilot session, processes or clocks)
async def test_help_opens_and_closes(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_q_quits(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


@pytest.mark.parametrize("size", [(30, 8), (49, 24), (80, 11), (60, 16), (200, 50)])
@pytest.mark.slow  # seconds of real time (a pilot session, processes or clocks)
async def test_any_size_renders_or_says_too_small_never_crashes(db, clock, size):
    app = make_app(db, clock)
    async with app.run_test(size=size) as pilot:
        await start(app, pilot)
        small = size[0] < 50 or size[1] < 12
        assert app.query_one("#too-small").display is small
        assert app.query_one("#body").display is not small
        assert app.screen.has_class("-too-small") is small
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert not app.screen.has_class("-too-small")
        assert not app.query_one("#too-small").display and app.query_one("#body").display


@pytest.mark.slow  # seconds of real time (a pilot session, processes or clocks)
async def test_unavailable_database_shows_a_banner_and_recovers(db, clock, monkeypatch):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        real = app.source.poll

        def locked(*a, **k):
            raise Unavailable("jobs.db: the database stayed locked past the busy timeout")

        monkeypatch.setattr(app.source, "poll", locked)
        app.request_poll()
        await settle(pilot)
        banner = app.query_one("#banner")
        assert banner.display and "locked" in str(banner.render())
        assert len(rows(app)) == 5  # the last data stays
        monkeypatch.setattr(app.source, "poll", real)
        app.request_poll()
        await settle(pilot)
        assert not banner.display


def hues(widget):
    """The colours the widget draws (after the app's filters) that are not a grey."""
    found = set()
    for strip in widget.render_lines(Region(0, 0, widget.size.width, widget.size.height)):
        for segment in strip:
            style = segment.style
            for colour in (style.color, style.bgcolor) if style else ():
                if colour is not None and not colour.is_default:
                    r, g, b = colour.get_truecolor()
                    if not r == g == b:
                        found.add((r, g, b))
    return found


@pytest.mark.parametrize("no_color", [False, True])
@pytest.mark.slow  # seconds of real time (a pilot session, processes or clocks)
async def test_no_color_draws_in_greys_only_and_states_still_read(db, clock, monkeypatch,
                                                                  no_color):
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        assert [r[6] for r in rows(app)][:2] == ["✗ EXPIRED 0:42 ago", "! 0:03"]
        drawn = hues(app.table()) | hues(app.query_one("#header"))
        assert bool(drawn) is not no_color, drawn  # in colour, the states are coloured
        await pilot.press("3")
        await settle(pilot)
        assert [r[2] for r in rows(app)] == ["● ok", "◐ late", "✗ lost"]
        assert bool(hues(app.table())) is not no_color


@pytest.mark.slow  # seconds of real time (a pilot session, processes or clocks)
async def test_clicking_a_column_header_sorts_by_it_and_a_tab_switches_view(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        await pilot.click("#table-running", offset=(8, 0))  # the KIND header
        await pilot.click("#table-running", offset=(8, 0))  # again: reversed
        assert [r[1] for r in rows(app)][0] == "sync_crm"
        await pilot.click("#tabs Tab#--content-tab-workers")
        await settle(pilot)
        assert app.view == "workers"


@pytest.mark.slow  # every view and key
async def test_the_footer_offers_each_action_key_only_in_the_views_it_acts_in(db, clock):
    """So it fits 80 columns; a key pressed elsewhere says where it acts."""
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await start(app, pilot)
        offered = {}
        for view in "1234567":
            await pilot.press(view)
            await settle(pilot)
            offered[view] = {b.binding.key: b.binding.description
                             for b in app.active_bindings.values()
                             if b.enabled and b.binding.show and b.binding.key in "RAKXP"}
        assert offered == {"1": {"R": "take back", "K": "cancel"}, "2": {"P": "pause queue"},
                           "3": {"X": "forget lost"}, "4": {"K": "cancel"},
                           "5": {"R": "retry", "A": "retry all"},
                           "6": {"R": "retry", "A": "retry all", "K": "cancel"}, "7": {}}
        footer = app.screen.query_one(Footer)
        for view in "1234567":
            await pilot.press(view)
            await settle(pilot)
            assert footer.size.width == 80 and footer.virtual_size.width <= 80
        await pilot.press("7", "K")
        assert "open Running (1), Retries (4) or All (6)" in str(app.query_one("#status").render())
        assert not isinstance(app.screen, ConfirmScreen)


async def test_what_the_app_made_at_start_is_frozen_out_of_full_gc_passes_until_it_exits(
        db, clock):
    """``gc.freeze`` after the first screen update (its gain: ``bench/tui_tricks.py``),
    and ``gc.unfreeze`` when the app is gone, so what it made can be collected again."""
    import gc

    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        frozen = gc.get_freeze_count()
        assert frozen > 10_000  # Textual and the widgets, not a handful
    assert gc.get_freeze_count() == 0
