"""Untrusted strings become plain, visible text: no control character survives
(``jobq_core.common.textsafe.clean``), and the monitor's cells show it literally, never as
markup (``views.cells.literal``)."""
import unicodedata

import pytest

from jobq_core.common.error_groups import error_line, first_line
from jobq_core.common.textsafe import clean
from jobq_tui.views.cells import literal

HOSTILE = [
    "[bold]loud[/bold]", "[@click=app.quit]click me[/]", "\x1b[2J\x1b[31mred",
    "\x1b]52;c;ZWNobyBvd25lZA==\x07", "\x1b]0;title\x1b\\", "bell\x07", "nul\x00byte",
    "\u202egnp.exe", "\u2066iso\u2069", "\x9b31m", "del\x7f", "zero\u200bwidth", "ls\u2028ps",
]


@pytest.mark.parametrize("s", HOSTILE)
def test_no_control_or_format_character_survives(s):
    out = clean(s)
    assert all(unicodedata.category(c) not in ("Cc", "Cf", "Zl", "Zp") for c in out), repr(out)


def test_escape_bell_nul_and_bidi_get_visible_stand_ins():
    assert clean("a\x1b[31mb\x07\x00") == "a␛[31mb␇␀"
    assert clean("\u202eabc") == "⟨U+202E⟩abc"
    assert clean("\x9b") == "⟨U+009B⟩"


def test_markup_is_kept_as_characters_and_never_parsed():
    t = literal("[bold]x[/bold] [@click=app.quit]")
    assert t.plain == "[bold]x[/bold] [@click=app.quit]"
    assert not t.spans


def test_newlines_show_as_a_mark_on_one_line_and_are_kept_in_multiline_mode():
    assert clean("a\nb\tc") == "a⏎b c"
    assert clean("a\r\nb\tc", multiline=True) == "a\nb    c"


def test_limit_cuts_with_an_ellipsis_and_long_values_stay_cheap():
    assert clean("abcdef", limit=4) == "abc…"
    assert len(clean("\x1b" * 1_000_000, limit=10)) == 10


def test_first_line_of_a_traceback():
    assert first_line("KeyError: 'x'\nTraceback...") == "KeyError: 'x'"
    assert first_line(None) == ""


def test_ordinary_unicode_is_left_alone():
    assert clean("café — 東京 ✓") == "café — 東京 ✓"


def test_the_error_line_of_a_traceback_is_its_exception():
    tb = 'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: bad\n\n'
    assert error_line(tb) == "ValueError: bad"
    assert error_line("OSError: disk full\nmore") == "OSError: disk full"
