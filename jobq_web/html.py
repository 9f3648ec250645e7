"""Cells, text and JSON as the dashboard sends them: the one place database text becomes
HTML or JSON.

Invariants:

* Templates autoescape (``templates()``), and a cell becomes HTML only through
  ``cell_html``: each part's text escaped, its style a class name from ``CLASSES`` (never
  text from the database). No other code builds markup.
* Text from the database shown outside the view model's cells (a payload, an error, a
  traceback) goes through ``long_text`` first: ``textsafe.clean`` (controls, invisible
  characters and lone surrogates made visible) and cut to ``LONG`` characters, so a 1 MB
  error is a page of text, not a 1 MB page; the JSON twin carries it whole.
* JSON is written ASCII-only (``json_bytes``): a lone surrogate or a control character
  from the database travels as an escape, never raw.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape

from jobq_core.common.textsafe import clean
from jobq_core.presentation.display import timestamp
from jobq_core.presentation.views.cells import Shown, shown_at

LONG = 20_000  # characters of one text shown on a page (the API has it all)
TEMPLATES = Path(__file__).parent / "templates"

# A cell's style (a Rich style name, ``views.cells``) -> its class in app.css.
CLASSES = {"yellow": "warn", "bold red": "bad", "dim": "dim", "green": "ok",
           "magenta": "note", "cyan": "run"}


def cell_html(cell: Shown, now: float) -> Markup:
    """A view model's cell as HTML at ``now``: escaped text in classed spans."""
    shown = shown_at(cell, now)
    out = []
    for text, style in shown.parts():
        if not text:
            continue
        cls = CLASSES.get(style)
        out.append(Markup('<span class="{}">{}</span>').format(cls, text) if cls
                   else escape(text))
    return Markup("").join(out)


def long_text(value: object) -> str:
    """Text from the database for a page: made visible (``clean``), newlines kept, cut."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    cut = len(text) > LONG
    shown = clean(text[:LONG], multiline=True)
    if cut:
        shown += f"\n… {len(text) - LONG:,} more characters: see the JSON twin of this page"
    return shown


def pretty(value: Any) -> str:
    """A payload or result as indented JSON, made safe to show."""
    if value is None:
        return "null"
    try:
        text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=repr)
    except (ValueError, TypeError, RecursionError):
        text = repr(value)
    return long_text(text)


def row_id(key: str) -> str:
    """A row's key as an HTML attribute: a digest (a dead group's key is an error line)."""
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def segment(value: object) -> str:
    """A name as one URL path segment (a queue's name may hold ``/`` or ``?``)."""
    return quote(str(value), safe="")


def json_bytes(value: Any) -> bytes:
    """JSON as ``jobq ... --json`` writes it: ASCII-only, a value JSON has no type for as
    its repr."""
    return json.dumps(value, ensure_ascii=True, allow_nan=False, default=repr).encode()


def templates() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES),
                      autoescape=select_autoescape(["html"], default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["cell"] = cell_html
    env.filters["long"] = long_text
    env.filters["pretty"] = pretty
    env.filters["seg"] = segment
    env.filters["row_id"] = row_id
    env.filters["clock"] = lambda t: "-" if t is None else timestamp(t)
    env.filters["safe_name"] = lambda v, limit=200: clean(v, limit=limit)
    return env
