"""The status line under the table and the banner over everything: ``Text`` from our own
words, numbers and ``literal`` database text. No Textual here.
"""
from __future__ import annotations

from rich.text import Text

from jobq_core.presentation.display import cut_middle

from jobq_core.presentation.views.filters import Filter
from jobq_core.presentation.views.snapshot import ROW_LIMIT
from .views.cells import literal


def banner_text(error: str | None, blockers: tuple[str, ...]) -> Text | None:
    """What stops the monitor from showing current data, or None."""
    if error:
        text = Text("✗ database unavailable: ", "bold")
        text.append_text(literal(error, limit=300))
        text.append(" — showing the last data read; retrying…")
        return text
    if blockers:
        text = Text("✗ writes are blocked: the write lock is held by ", "bold")
        text.append_text(literal("; ".join(blockers), limit=300))
        text.append(" — resume it (kill -CONT) or end it")
        return text
    return None


def status_text(rows: int, read: bool, filt: Filter, sorted_by: str | None,
                grouped: bool | None, message: Text, searched: int | None = None) -> Text:
    """``rows`` shown (``read``: rows were read, so a full table means there are more);
    ``sorted_by``: the sort column's label with its arrow; ``grouped``: None in a view
    that does not group; ``searched``: the newest jobs a text search read (None: all)."""
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"{rows} row{'' if rows == 1 else 's'}", "dim")
    if read and rows >= ROW_LIMIT:
        t.append(f" (first {ROW_LIMIT}; filter to narrow)", "dim")
    if filt.group is not None:  # a dead group's jobs: say which group
        t.append("  group ", "dim")
        t.append_text(literal(f"{filt.kind}: {cut_middle(filt.group, 44)}", "bold"))
        t.append("  esc: all", "dim")
    elif not filt.empty:
        t.append("  filter ", "dim")
        t.append_text(literal(filt.text, "bold", limit=60))
        if searched is not None:
            t.append(f" in the newest {searched:,} (scope:all: every job)", "dim")
    if sorted_by is not None:
        t.append(f"  sorted by {sorted_by}", "dim")
    if grouped is not None:
        t.append("  grouped by error (d: one row per job)" if grouped
                 else "  one row per job (d: group by error)", "dim")
    if message:
        t.append("  ")
        t.append_text(message)
    return t


__all__ = ["banner_text", "status_text"]
