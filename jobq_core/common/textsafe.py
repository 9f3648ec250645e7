"""Untrusted text from the database -> plain text that is safe to put on a terminal (and
untrusted text for the database -> text every store can write).

Kinds, queue and worker names, payloads, results and errors are written by whoever
enqueues or runs jobs; an operator's terminal must not be steered by them. Invariant: the
result of ``clean`` never contains a C0 or C1 control character (ESC, BEL, NUL, CSI ...),
DEL, a bidi override/isolate, a line or paragraph separator or any other invisible format
character: each is replaced by a visible stand-in (``␛``, ``␇``, ``␀``, ``⟨U+202E⟩``), so
no escape sequence (CSI, OSC 52 clipboard writes, title changes) reaches the terminal.

``storable`` is the other direction: text a handler hands over (an error, a progress
message) made writable by every store.

This module knows nothing of markup: whoever renders the result must still show it as
literal text (``rich.text.Text``, ``markup=False``), never parse it as markup.
"""
from __future__ import annotations

import unicodedata
from functools import lru_cache

_PICTURES = {i: chr(0x2400 + i) for i in range(0x20)}  # ␀ ␁ ... ␟
_PICTURES[0x7F] = "␡"
_PICTURES[0x1B] = "␛"
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
ELLIPSIS = "…"


@lru_cache(maxsize=4096)
def _visible(ch: str) -> str:
    code = ord(ch)
    if code in _PICTURES:
        return _PICTURES[code]
    if unicodedata.category(ch) in _HIDDEN_CATEGORIES:
        return f"⟨U+{code:04X}⟩"
    return ch


def clean(value: object, *, multiline: bool = False, limit: int | None = None) -> str:
    """``value`` as text with every control/invisible character made visible.

    ``multiline`` keeps newlines (and turns tabs into 4 spaces) for detail views;
    otherwise newlines show as ``⏎`` so one value is one line. ``limit`` cuts the result
    to that many characters, ending in ``…``.
    """
    if value is None:
        return ""
    s = value if isinstance(value, str) else str(value)
    if limit is not None and len(s) > limit * 4:
        s = s[: limit * 4]  # a long value never costs more than a short one to clean
    if not s.isprintable():
        out = []
        for ch in s:
            if ch == "\n":
                out.append("\n" if multiline else "⏎")
            elif ch == "\t":
                out.append("    " if multiline else " ")
            elif ch == "\r" and multiline:
                continue
            else:
                out.append(ch if ch.isprintable() else _visible(ch))
        s = "".join(out)
    if limit is not None and len(s) > limit:
        s = s[: max(0, limit - 1)] + ELLIPSIS
    return s


def storable(text: str) -> str:
    """``text`` as every store can write it (not a display form: see ``clean``).

    Invariant: the result encodes as UTF-8 and holds no NUL. A lone surrogate (undecodable
    bytes, e.g. a file name from ``os.fsdecode``) becomes its Python escape (``\\udcff``,
    six characters), a NUL becomes ``\\x00`` (four): SQLite's and PostgreSQL's drivers
    refuse the first, PostgreSQL's text the second, and one such error text made a whole
    batch of outcomes fail. Text that needs no change is returned as it is."""
    if text.isascii():
        return text.replace("\x00", "\\x00") if "\x00" in text else text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text.replace("\x00", "\\x00") if "\x00" in text else text
