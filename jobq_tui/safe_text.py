"""Untrusted text from the database -> plain text that is safe to put on a terminal.

Kinds, queue and worker names, payloads, results and errors are written by whoever
enqueues or runs jobs; an operator's terminal must not be steered by them. Invariants:

* The result never contains a C0 or C1 control character (ESC, BEL, NUL, CSI ...), DEL,
  a bidi override/isolate, a line or paragraph separator or any other invisible format
  character: each is replaced by a visible stand-in (``␛``, ``␇``, ``␀``, ``⟨U+202E⟩``).
  So no escape sequence (CSI, OSC 52 clipboard writes, title changes) reaches the terminal.
* ``clean`` (shared with the command line, in ``jobq_core.textsafe``) does the above;
  only ``display_text`` makes ``Text`` for widgets, and a ``Text`` is never parsed as
  markup: ``[bold]`` or ``[@click=app.quit]`` from the database show as those characters.
  Never pass database strings to anything that parses markup (``Static("...")``,
  ``notify(markup=True)``, f-strings into markup).
"""
from __future__ import annotations

from rich.text import Text

from jobq_core.error_groups import error_line, first_line
from jobq_core.textsafe import ELLIPSIS, clean

__all__ = ["ELLIPSIS", "clean", "display_text", "error_line", "first_line"]


def display_text(value: object, style: str = "", *, multiline: bool = False,
                 limit: int | None = None) -> Text:
    """A ``Text`` showing ``value`` literally (see the module invariants)."""
    return Text(clean(value, multiline=multiline, limit=limit), style=style,
                no_wrap=not multiline, overflow="ellipsis" if not multiline else "fold")
