"""The keys that act on what one view shows, declared once: a view lists the ones it
offers (``View.keys``), and from those the app makes its key bindings and footer hints,
the help screen its lines, and a key pressed in a view that does not offer it the hint
that says where it acts. No Textual here.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ViewKey:
    """``key`` runs the app's ``action_<action>`` in the views that offer it; elsewhere
    it says where it acts (``does``, then the views). ``label``: its word in the footer
    (``footer=False``: not shown there); ``help``: its line on the help screen, after the
    views it acts in. ``writes``: it changes the database (a read-only monitor hides it)."""

    key: str
    action: str
    label: str
    does: str
    help: str
    writes: bool = True
    footer: bool = True


GROUP = ViewKey("d", "group", "group", "switches between error groups and jobs",
                "grouped by error, or one row per job", writes=False, footer=False)
RETRY = ViewKey("R", "retry", "retry", "retries the selected dead job",
                "retry the job or group")
TAKE_BACK = ViewKey("R", "take_back", "take back", "takes the selected running job back",
                    "take it back")
RETRY_ALL = ViewKey("A", "retry_all", "retry all", "retries every dead job the filter selects",
                    "retry every dead job the filter selects")
CANCEL = ViewKey("K", "cancel_job", "cancel", "cancels the selected job", "cancel the job")
FORGET = ViewKey("X", "forget_lost", "forget lost", "forgets lost workers",
                 "forget the lost workers")
PAUSE_QUEUE = ViewKey("P", "pause_queue", "pause queue", "pauses or resumes the selected queue",
                      "pause or resume the queue, for every worker")

# In the order the help screen lists them; of two on one key, the first is the one the
# hint names when neither acts.
ALL = (GROUP, RETRY, TAKE_BACK, RETRY_ALL, CANCEL, FORGET, PAUSE_QUEUE)

__all__ = ["ALL", "CANCEL", "FORGET", "GROUP", "PAUSE_QUEUE", "RETRY", "RETRY_ALL",
           "TAKE_BACK", "ViewKey"]
