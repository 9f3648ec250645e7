"""The monitor's write actions: retry a dead job, retry every dead job matching the
filter, cancel a job; retry or cancel the jobs marked with ``space``. A mixin of
``MonitorApp``.

Each asks first, with a confirmation that says how many jobs it touches, and then runs in
a thread through ``Source`` (a short-lived write connection per action). Read-only
monitors never get here: ``MonitorApp.check_action`` hides these keys.
"""
from __future__ import annotations

from rich.text import Text
from textual import work

from jobq_core.errors import JobqError

from .filters import Filter
from .safe_text import display_text
from .source import Unavailable
from .widgets.screens import ConfirmScreen


class WriteActions:
    """Needs from its host app: ``source``, ``filter``, ``view``, ``table()``, ``say()``,
    ``request_poll()``, ``push_screen()`` and ``call_from_thread()``."""

    def action_mark(self) -> None:
        table = self.table()
        row = table.current_row()
        if row is None or row.job_id is None or row.group is not None:
            self.say("space marks jobs (on a dead group: d lists its jobs)")
            return
        table.toggle_mark(row.key)
        table.move_cursor(row=table.cursor_row + 1)
        n = len(table.marked)
        self.say(f"{n} marked: R retries them, K cancels them, esc unmarks" if n else
                 "nothing marked")

    def _marked_ids(self) -> list[int]:
        return [r.job_id for r in self.table().marked_rows() if r.job_id is not None]

    def action_retry(self) -> None:
        marked = self._marked_ids()
        if marked:
            msg = Text(f"Retry {_jobs(len(marked), 'marked')}? Dead and cancelled ones "
                       "run again with a fresh allowance of attempts; others are left alone.")
            self.push_screen(ConfirmScreen(msg),
                             lambda yes: yes and self._act("retry_many", marked))
            return
        row = self.table().current_row()
        if self.view not in ("dead", "all") or row is None:
            self.say("R retries the selected dead job: open the Dead view (5)")
            return
        if row.group is not None:
            g = row.group
            filt = Filter(kind=g.kind, error=g.match or None)
            self._confirm_retry_matching(filt, "every dead job of this group:")
            return
        job_id = row.job_id
        msg = Text(f"Retry dead job {job_id}? It runs again with a fresh allowance of attempts.")
        self.push_screen(ConfirmScreen(msg), lambda yes: yes and self._act("retry", job_id))

    def action_retry_all(self) -> None:
        f = self.filter
        if f.worker or f.words or f.status:
            self.say("retry all uses only queue:, kind: and error: — remove other filter terms",
                     "bold red")
            return
        self._confirm_retry_matching(f, "every dead job" if f.empty else
                                     "every dead job matching the filter:")

    def _confirm_retry_matching(self, filt: Filter, what: str) -> None:
        try:
            n = self.source.count_dead(filt)
        except Unavailable as e:
            self.say(str(e), "bold red")
            return
        if n == 0:
            self.say("no dead jobs match")
            return
        msg = Text(f"Retry {_jobs(n, 'dead')}?", "bold")
        msg.append(f"\n{what}")
        for label, value in (("queue", filt.queue), ("kind", filt.kind),
                             ("error contains", filt.error)):
            if value:
                msg.append(f"\n  {label}: ")
                msg.append_text(display_text(value, limit=120))
        self.push_screen(ConfirmScreen(msg), lambda yes: yes and self._act("retry_dead", filt))

    def action_cancel_job(self) -> None:
        marked = self._marked_ids()
        if marked:
            msg = Text(f"Cancel {_jobs(len(marked), 'marked')}? Pending ones are "
                       "cancelled at once, running ones asked to stop; finished ones are left "
                       "alone.")
            self.push_screen(ConfirmScreen(msg),
                             lambda yes: yes and self._act("cancel_many", marked))
            return
        row = self.table().current_row()
        if row is None or row.job_id is None or row.group is not None:
            self.say("K cancels the selected job: select a pending or running job")
            return
        msg = Text(f"Cancel job {row.job_id}? A pending job is cancelled at once; a running "
                   "one is asked to stop at its next heartbeat.")
        self.push_screen(ConfirmScreen(msg), lambda yes: yes and self._act("cancel", row.job_id))

    @work(thread=True, group="act")
    def _act(self, what: str, arg) -> None:
        try:
            if what in ("retry_many", "cancel_many"):
                acted, skipped = (self.source.retry_many(arg) if what == "retry_many"
                                  else self.source.cancel_many(arg))
                verb = "retried" if what == "retry_many" else "cancelled or asked to stop"
                done = f"{_jobs(acted)} {verb}" + (
                    f", {skipped} left alone (already in another state)" if skipped else "")
                self.call_from_thread(self.table().clear_marks)
            elif what == "retry":
                self.source.retry(arg)
                done = f"job {arg} is pending again"
            elif what == "cancel":
                status = self.source.cancel(arg)
                done = (f"job {arg} cancelled" if status == "cancelled"
                        else f"job {arg}: cancel requested; it stops at its next heartbeat")
            else:
                done = f"{self.source.retry_dead(arg)} dead jobs are pending again"
            style = "green"
        except (JobqError, OSError) as e:
            done, style = f"{what} failed: {e}", "bold red"
        self.call_from_thread(self.say, done, style)
        self.call_from_thread(self.request_poll, True)


def _jobs(n: int, kind: str = "") -> str:
    """``"1 dead job"``, ``"2 dead jobs"``."""
    return f"{n} {kind + ' ' if kind else ''}job{'' if n == 1 else 's'}"
