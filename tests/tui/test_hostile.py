"""Hostile strings in every field the monitor shows are displayed literally: markup is not
interpreted, and no control character or escape sequence reaches the terminal."""
import os
import pty
import select
import sys
import time
import unicodedata

import pytest

import fixture_db
from conftest import make_app, settle
from jobq_tui.screens import DetailScreen

HOSTILE = ("[bold]B[/bold][@click=app.quit]Q[/]\x1b[2J\x1b]52;c;SE9TVElMRQ==\x07"
           "\x1b]0;PWNED\x07\x00\u202eevil\u2066\x9b6n\x7f")
VISIBLE = "[bold]B[/bold][@click=app.quit]Q[/]␛[2J␛]52;c;SE9TVElMRQ==␇"


@pytest.fixture
def hostile_db(tmp_path):
    path = tmp_path / "hostile.db"
    clock = fixture_db.build(path, hostile=HOSTILE)
    return path, clock


def _assert_safe(text: str) -> None:
    bad = [c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")
           and c != "\n"]
    assert not bad, f"raw control characters {bad!r} in {text!r}"


@pytest.mark.slow  # a pilot session through views and dialogs: seconds
async def test_every_view_and_the_detail_show_hostile_text_literally(hostile_db):
    path, clock = hostile_db
    app = make_app(path, clock)
    seen = 0
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        for key in ("1", "2", "3", "4", "5", "d", "6"):
            await pilot.press(key)
            await settle(pilot)
            t = app.table()
            for i in range(t.row_count):
                for cell in t.get_row_at(i):
                    _assert_safe(cell.plain)
                    # Parsed as markup, HOSTILE's opening "[bold]B[/bold][@click=app.quit]Q[/]"
                    # would read "BQ"; shown literally, its tags stay between the letters.
                    assert "BQ" not in cell.plain, f"markup was parsed in {cell.plain!r}"
                    seen += VISIBLE in cell.plain or "[bold]B[/bold]" in cell.plain
        _assert_safe(str(app.query_one("#header").render()))
        await pilot.press("5", "home", "enter")  # the Dead view, one row per job
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        body = str(app.screen.query_one("#detail-body").render())
        _assert_safe(body)
        assert VISIBLE in body and "⟨U+202E⟩evil" in body
        assert app.is_running  # [@click=app.quit] did nothing
    assert seen >= 10


@pytest.mark.slow  # a real terminal, read for seconds
def test_nothing_raw_reaches_a_real_terminal(tmp_path):
    """The real app in a pseudo-terminal: its output bytes never carry the payloads'
    OSC 52 clipboard write, title change, BEL or NUL."""
    script = os.path.join(os.path.dirname(__file__), "run_fixture_app.py")
    pid, fd = pty.fork()
    if pid == 0:  # child
        os.environ.update(TERM="xterm-256color", COLUMNS="200", LINES="50")
        os.execv(sys.executable, [sys.executable, script, str(tmp_path / "h.db"),
                                  repr(HOSTILE)])
    out = b""
    try:
        import fcntl
        import struct
        import termios

        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        def read_for(seconds: float, until: bytes | None = None) -> bytes:
            """What the app writes for ``seconds``, or until ``until`` has been written."""
            got = b""
            end = time.monotonic() + seconds
            while time.monotonic() < end and not (until and until in got):
                ready, _, _ = select.select([fd], [], [], 0.05)
                if ready:
                    try:
                        got += os.read(fd, 65536)
                    except OSError:
                        break
            return got

        # until the first screen has drawn the hostile rows (a loaded machine can take
        # more than 2 s just to start the app)
        out += read_for(30.0, until=b"SE9TVElMRQ")
        for key in (b"5", b"d", b"6", b"\r"):
            os.write(fd, key)
            out += read_for(0.6)
        os.write(fd, b"\x1b")
        time.sleep(0.2)
        os.write(fd, b"q")
        time.sleep(0.5)
    finally:
        try:
            os.kill(pid, 15)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        os.close(fd)
    text = out.decode("utf-8", "replace")
    assert "SE9TVElMRQ" in text, "the hostile rows were never drawn"
    assert "]52;" not in text.replace("␛]52;", "")
    own = text.replace("\x1b]22;default\x07", "")  # Textual's own pointer-shape OSC
    assert "PWNED\x07" not in own
    assert "\x07" not in own
    assert "\x00" not in own
    assert "\u202e" not in text and "\x9b" not in text
    assert "␛]52;c;SE9TVElMRQ==␇" in text
