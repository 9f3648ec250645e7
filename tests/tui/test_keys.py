"""Keys as an operator types them, over ssh: in bursts, into the filter as they arrive,
and never acting on a row the operator cannot see."""
import pytest
from textual import events
from textual.keys import _character_to_key

from conftest import make_app, settle
from jobq_core import Queue


def rows(app):
    t = app.table()
    return [[c.plain for c in t.get_row_at(i)] for i in range(t.row_count)]


def status(app):
    return str(app.query_one("#status").render())


async def burst(pilot, *keys: str) -> None:
    """Keys that arrive together (one read from the terminal): all queued before the app
    handles the first. A one-character string is that character; longer ones key names."""
    app = pilot.app
    for key in keys:
        for k in ([key] if len(key) > 1 else list(key)):
            name = _character_to_key(k) if len(k) == 1 and not k.isalnum() else k
            char = k if len(k) == 1 else ("\r" if k == "enter" else None)
            event = events.Key(name, char)
            event.set_sender(app)
            app._driver.send_message(event)
    await settle(pilot)


@pytest.mark.slow  # seconds of real time (processes, connections, clocks)
async def test_a_filter_typed_in_one_burst_goes_into_the_filter_and_does_not_quit(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        await burst(pilot, *"/queue:mail", "enter", "j")
        assert app.is_running and app.return_code is None
        assert app.filter.text == "queue:mail"
        assert {r[3] for r in rows(app)} == {"mail"}
        # the key after enter went to the table, not into the box
        assert app.focused is app.table() and app.query_one("#filter").value == "queue:mail"
        assert app.table().current_row().job_id != 57  # moved off the first row


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_the_filter_applies_as_you_type_and_queue_and_kind_match_prefixes(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        await burst(pilot, *"/queue:ma")  # no enter yet
        assert app.focused.id == "filter"
        assert app.filter.queue == "ma" and {r[3] for r in rows(app)} == {"mail"}
        await burst(pilot, "backspace", "backspace", *"cr")
        assert {r[3] for r in rows(app)} == {"crm"}
        await burst(pilot, *' kind:sync_')
        assert {r[2] for r in rows(app)} == {"sync_crm"}
        await burst(pilot, "enter")
        assert app.focused is app.table()


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_free_words_search_the_whole_database_not_only_the_rows_loaded(tmp_path):
    from jobq_core.testing import FakeClock

    clock = FakeClock(1_767_225_600.0)
    path = tmp_path / "jobs.db"
    with Queue(path, clock=clock, max_attempts=1) as q:
        q.enqueue("import.csv", {"file": "old.csv"})
        job = q.claim("w")
        q.fail(job.id, job.token, "ValueError: bad row in old.csv")
        q.enqueue_many([("noise", {"i": i}) for i in range(400)])  # the newest 200 are noise
    app = make_app(path, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        assert job.id not in {int(r[0]) for r in rows(app)}
        await burst(pilot, *"/OLD.CSV", "enter")
        assert [int(r[0]) for r in rows(app)] == [job.id]


@pytest.mark.slow  # seconds of real time (a pilot session, processes or clocks)
async def test_hash_and_an_id_in_the_filter_box_opens_that_job(db, clock):
    from jobq_tui.screens import DetailScreen

    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await burst(pilot, *"/#46", "enter")
        assert isinstance(app.screen, DetailScreen) and app.screen.job_id == 46
        assert app.filter.empty  # not a filter
        await settle(pilot)
        assert "a.png" in str(app.screen.query_one("#detail-body").render())


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_A_retries_the_dead_jobs_a_prefix_and_words_select_and_says_so_first(db, clock):
    from jobq_tui.screens import ConfirmScreen

    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await burst(pilot, *"/kind:build 502", "enter", "A")
        assert isinstance(app.screen, ConfirmScreen)
        message = str(app.screen.message)
        assert message.startswith("Retry 5 dead jobs?")
        assert "kind starts with: build" in message and "words: 502" in message
        await burst(pilot, "y")
    with Queue(db, clock=clock) as q:
        assert [j.kind for j in q.list("dead")] == ["resize"]


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_the_highlighted_row_stays_in_view_as_new_rows_arrive_above_it(tmp_path):
    from jobq_core.testing import FakeClock

    clock = FakeClock(1_767_225_600.0)
    path = tmp_path / "jobs.db"
    with Queue(path, clock=clock) as q:
        q.enqueue_many([("old", {"i": i}) for i in range(40)])
    app = make_app(path, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        await pilot.press("j", "j", "j")
        table = app.table()
        chosen, line = table.current_row().job_id, table.cursor_row - table.scroll_offset.y
        with Queue(path, clock=clock) as q:
            q.enqueue_many([("new", {"i": i}) for i in range(25)])  # newest first: above it
        app.request_poll(force=True)
        await settle(pilot)
        await pilot.pause()
        assert table.current_row().job_id == chosen
        assert table.cursor_row - table.scroll_offset.y == line  # same place on the screen
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen.job_id == chosen


@pytest.mark.slow  # seconds of real time (a pilot session, processes or clocks)
async def test_enter_and_j_on_a_row_scrolled_out_of_view_first_show_it(tmp_path):
    from jobq_core.testing import FakeClock
    from jobq_tui.screens import DetailScreen

    clock = FakeClock(1_767_225_600.0)
    path = tmp_path / "jobs.db"
    with Queue(path, clock=clock) as q:
        q.enqueue_many([("old", {"i": i}) for i in range(60)])
    app = make_app(path, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        table = app.table()
        table.scroll_to(y=40, animate=False)  # the mouse wheel: the cursor (row 0) is gone
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, DetailScreen)
        assert table.scroll_offset.y == 0 and table.cursor_row == 0
        table.scroll_to(y=40, animate=False)
        await pilot.pause()
        await pilot.press("j")
        assert table.cursor_row == 0 and table.scroll_offset.y == 0


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_text_is_cut_only_when_the_screen_is_full_and_errors_keep_their_telling_end(
        tmp_path):
    from jobq_core.testing import FakeClock

    clock = FakeClock(1_767_225_600.0)
    path = tmp_path / "jobs.db"
    kind = "billing.invoice.send_payment_reminder"
    with Queue(path, clock=clock, max_attempts=1) as q:
        q.enqueue(kind, queue="billing")
        job = q.claim("w1")
        q.fail(job.id, job.token, "RuntimeError: billing API returned HTTP 502 for invoice "
                                  "INV-59476 after 3 tries")
        q.enqueue(kind, queue="billing")
        q.claim("w1")
    app = make_app(path, clock)
    async with app.run_test(size=(100, 24)) as pilot:
        await settle(pilot)
        assert rows(app)[0][1] == kind  # room enough: not cut to 14 characters
        await pilot.press("5")
        await settle(pilot)
        line = app.table().render_line(1).text
        assert kind in line
        assert "RuntimeError" in line and "INV-59476 after 3 tries" in line and "…" in line
    app = make_app(path, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        line = app.table().render_line(1).text
        assert len(line.rstrip()) <= 80 and "3 tries" in line and "Runtime" in line


async def test_help_fits_80x24_and_scrolls_with_the_list_keys_when_smaller(db, clock):
    from jobq_tui.screens import HelpScreen
    from jobq_tui.screens.help import HELP

    lines = HELP.splitlines()
    assert len(lines) <= 22 and max(len(line) for line in lines) <= 76  # inside its border
    assert "PgUp" in HELP and "X" in HELP and "#123" in HELP
    app = make_app(db, clock)
    async with app.run_test(size=(80, 16)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        scroll = app.screen.query_one("#help")
        await pilot.press("G")
        assert scroll.scroll_offset.y > 0
        await pilot.press("g")
        assert scroll.scroll_offset.y == 0
        await pilot.press("j", "j")
        assert scroll.scroll_offset.y == 2


async def test_G_and_g_jump_to_the_end_and_top_of_the_job_detail(tmp_path):
    from jobq_core.testing import FakeClock
    from jobq_tui.screens import DetailScreen

    clock = FakeClock(1_767_225_600.0)
    path = tmp_path / "jobs.db"
    with Queue(path, clock=clock, max_attempts=5) as q:
        job_id = q.enqueue("flaky", {"n": 1})
        for i in range(4):
            job = q.claim("w")
            q.fail(job.id, job.token, "Traceback (most recent call last):\n"
                   + "".join(f"  File \"f{n}.py\", line {n}\n" for n in range(8))
                   + f"RuntimeError: attempt {i}", retry_in=0)
    app = make_app(path, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await burst(pilot, *f"/#{job_id}", "enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        scroll = app.screen.query_one("#detail-scroll")
        await pilot.press("G")
        await pilot.pause()
        assert scroll.scroll_offset.y == scroll.max_scroll_y > 0
        await pilot.press("g")
        await pilot.pause()
        assert scroll.scroll_offset.y == 0


async def test_a_dead_groups_jobs_say_which_group_in_the_status_line(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        line = status(app)
        assert line.startswith("5 rows  group build_report: RuntimeError:")
        assert "INV-#" in line and "esc: all" in line


async def test_every_key_typed_after_slash_is_filter_text_never_a_command(db, clock):
    from jobq_tui.screens import ConfirmScreen, HelpScreen

    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        # each of these is a command outside the box: quit, pause, views, retry, cancel,
        # forget, pause queue, sort, group, help, a second slash, mark (space)
        await burst(pilot, *"/qp16RAKXPsSd?/ x")
        assert app.is_running and app.live and app.view == "dead" and app.grouped
        assert not isinstance(app.screen, (ConfirmScreen, HelpScreen))
        assert app.query_one("#filter").value == "qp16RAKXPsSd?/ x"
        assert app.focused.id == "filter"


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_pgup_and_pgdn_scroll_the_help_a_page(db, clock):
    from jobq_tui.screens import HelpScreen

    app = make_app(db, clock)
    async with app.run_test(size=(80, 12)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        scroll = app.screen.query_one("#help")
        page = scroll.scrollable_content_region.height
        assert scroll.max_scroll_y > page > 1
        await pilot.press("pagedown")
        assert scroll.scroll_offset.y == page
        await pilot.press("pagedown", "pagedown", "pagedown")
        assert scroll.scroll_offset.y == scroll.max_scroll_y
        await pilot.press("pageup", "pageup", "pageup", "pageup")
        assert scroll.scroll_offset.y == 0


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_the_dead_views_status_line_shows_its_filter(db, clock):
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await burst(pilot, *"/kind:build", "enter")
        line = status(app)
        assert "filter kind:build" in line and "grouped by error" in line
        await pilot.press("d")
        await settle(pilot)
        assert "filter kind:build" in status(app) and "one row per job" in status(app)


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_free_words_in_the_dead_view_search_every_dead_job_not_the_groups_loaded(
        tmp_path):
    from jobq_core.testing import FakeClock
    from jobq_tui.screens import ConfirmScreen

    clock = FakeClock(1_767_225_600.0)
    path = tmp_path / "jobs.db"
    with Queue(path, clock=clock, max_attempts=1) as q:
        # 205 groups of two jobs: the 200 largest groups are loaded, the one below is not
        for i in range(205):
            for _ in range(2):
                q.enqueue(f"kind{i:03}")
                job = q.claim("w")
                q.fail(job.id, job.token, "RuntimeError: upstream timed out")
        q.enqueue("csv.import", queue="imports")
        job = q.claim("w-night")
        q.fail(job.id, job.token, "ValueError: bad row 17 in customers.csv")
    app = make_app(path, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        assert "csv.import" not in {r[1] for r in rows(app)}
        await burst(pilot, *"/customers.csv", "enter")
        assert [r[1] for r in rows(app)] == ["csv.import"]
        await burst(pilot, "escape")
        await burst(pilot, *"/w-night", "enter")  # the worker it died under: any field
        assert [r[1] for r in rows(app)] == ["csv.import"]
        await burst(pilot, "escape")
        await burst(pilot, *"/upstream w", "enter")  # 410 jobs, 205 groups: 200 of them shown
        assert len(rows(app)) == 200 and rows(app)[0][0] == "2"
        await burst(pilot, "escape")
        await burst(pilot, *"/upstream kind204", "enter")  # a group, and R on it: its jobs
        await burst(pilot, "R")
        assert isinstance(app.screen, ConfirmScreen)
        assert str(app.screen.message).startswith("Retry 2 dead jobs?")
        assert "words: upstream kind204" in str(app.screen.message)


async def test_the_filter_boxs_editing_keys_act_in_the_order_typed(db, clock):
    """Keys the box binds (home, end, arrows, ctrl+u) are looked up in its declared
    bindings and run at once, between the characters around them."""
    app = make_app(db, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await burst(pilot, *"/mail", "home", *"queue:", "end", *" x")
        box = app.query_one("#filter")
        assert box.value == "queue:mail x" and app.focused is box
        await burst(pilot, "home", "right", "right", "ctrl+u", "end", *"y")
        assert box.value == "eue:mail xy"  # ctrl+u deleted what was left of the cursor
