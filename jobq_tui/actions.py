"""The monitor's write actions: retry a dead job, retry every dead job matching the
filter, cancel a job; retry or cancel the jobs marked with ``space``; forget lost workers;
pause or resume the selected queue. A mixin of ``MonitorApp``.

Each asks first, with a confirmation that says how many jobs it touches, and then runs in
a thread through ``Source`` (a short-lived write connection per action). Read-only
monitors never get here: ``MonitorApp.check_action`` hides these keys.
"""
from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import work

from jobq_core import JobqError, JobStatus, WorkerState

from jobq_core.presentation.views.filters import Filter, group_filter
from .screens import ConfirmScreen
from .source import Unavailable
from .views import hint
from .views.cells import literal


class WriteActions:
    """Needs from its host app: ``source``, ``filter``, ``shown``, ``snapshot``, ``clock``,
    ``beat``, ``table()``, ``say()``, ``request_poll()``, ``push_screen()`` and
    ``call_from_thread()``."""

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

    def action_elsewhere(self, key: str) -> None:
        """An action key pressed in a view it does not act in: say where it does."""
        self.say(hint(key))

    def action_take_back(self) -> None:
        self.action_retry()

    def action_retry(self) -> None:
        marked = self._marked_ids()
        if marked:
            msg = Text(f"Retry {_jobs(len(marked), 'marked')}? Dead and cancelled ones "
                       "run again with a fresh allowance of attempts; others are left alone.")
            self._ask(msg, "retry", lambda: self._each(self.source.retry_many(marked),
                                                       "retried"))
            return
        row = self.table().current_row()
        if self.shown.takes_back and row is not None and row.job_id is not None:
            self._confirm_take_back(row.job_id)
            return
        if not self.shown.retries or row is None:
            self.say(hint("R"))
            return
        if row.group is not None:
            self._confirm_retry_matching(group_filter(row.group, self.filter.words),
                                         "every dead job of this group:")
            return
        job_id = row.job_id

        def retry() -> str:
            self.source.retry(job_id)
            return f"job {job_id} is pending again"

        msg = Text(f"Retry dead job {job_id}? It runs again with a fresh allowance of attempts.")
        self._ask(msg, "retry", retry)

    def _confirm_take_back(self, job_id: int) -> None:
        def take_back() -> str:
            self.source.retry(job_id, force=True)
            return f"job {job_id} taken back: pending again, its old worker fenced out"

        msg = Text(f"Take running job {job_id} back?", "bold")
        msg.append("\nFor a job stuck under a worker that will never finish it: the worker's "
                   "lease is revoked (it can no longer complete the job) and the job runs "
                   "again with a fresh allowance of attempts. If that worker is alive after "
                   "all, its handler may still be running.")
        self._ask(msg, "take back", take_back)

    def action_retry_all(self) -> None:
        f = self.filter
        if f.worker or f.status or f.key:
            self.say("retry all uses queue:, kind:, error: and words — remove worker:, "
                     "status: and key:", "bold red")
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
        error = ("error", f"{filt.group}  (# is any id or long number)") if filt.group \
            else ("error contains", filt.error)
        starts = " starts with" if filt.prefix else ""
        words = ("words", " ".join(filt.words)) if filt.words else ("", None)
        for label, value in (("queue" + starts, filt.queue), ("kind" + starts, filt.kind),
                             error, words):
            if value:
                msg.append(f"\n  {label}: ")
                msg.append_text(literal(value, limit=120))
        self._ask(msg, "retry", lambda: f"{self.source.retry_dead(filt)} dead jobs are "
                                        "pending again")

    def action_cancel_job(self) -> None:
        marked = self._marked_ids()
        if marked:
            msg = Text(f"Cancel {_jobs(len(marked), 'marked')}? Pending ones are "
                       "cancelled at once, running ones asked to stop; finished ones are left "
                       "alone.")
            self._ask(msg, "cancel", lambda: self._each(self.source.cancel_many(marked),
                                                        "cancelled or asked to stop"))
            return
        row = self.table().current_row()
        if row is None or row.job_id is None or row.group is not None:
            self.say("K cancels the selected job: select a pending or running job")
            return
        job_id = row.job_id

        def cancel() -> str:
            if self.source.cancel(job_id) == JobStatus.CANCELLED:
                return f"job {job_id} cancelled"
            return f"job {job_id}: cancel requested; it stops at its next heartbeat"

        msg = Text(f"Cancel job {job_id}? A pending job is cancelled at once; a running "
                   "one is asked to stop at its next heartbeat.")
        self._ask(msg, "cancel", cancel)

    def action_forget_lost(self) -> None:
        """Workers view: drop lost workers from the registry (``X``; ``check_action``
        offers it in that view only)."""
        snap, now = self.snapshot, self.clock.now()
        lost = [w for w in (snap.workers if snap else ())
                if w.state(now, self.beat) == WorkerState.LOST]
        if not lost:
            self.say("no lost workers to forget")
            return
        msg = Text(f"Forget {len(lost)} lost worker{'' if len(lost) == 1 else 's'}?", "bold")
        for w in lost[:5]:
            msg.append("\n  ")
            msg.append_text(literal(w.id, limit=60))
        if len(lost) > 5:
            msg.append(f"\n  and {len(lost) - 5} more")
        msg.append("\nTheir registry entries are deleted (their jobs come back when their "
                   "leases run out); one that beats again registers again.")

        def forget() -> str:
            n = self.source.forget_workers(lost)
            return f"forgot {n} lost worker{'' if n == 1 else 's'}"

        self._ask(msg, "forget", forget)

    def action_pause_queue(self) -> None:
        row = self.table().current_row()
        if row is None or row.queue is None:  # the Queues view only (``check_action``)
            self.say(hint("P"))
            return
        name = row.queue
        stats = self.snapshot.stats.queues.get(name) if self.snapshot else None
        pause = not (stats is not None and stats.paused)

        def act() -> str:
            self.source.pause(name, pause)
            return f"queue {name!r} {'paused' if pause else 'resumed'}"

        msg = Text("Pause queue " if pause else "Resume queue ", "bold")
        msg.append_text(literal(name, "bold", limit=60))
        msg.append("?", "bold")
        msg.append("\nNo worker starts its jobs until it is resumed; running jobs finish and "
                   "enqueue goes on." if pause else "\nWorkers start its jobs again.")
        self._ask(msg, "pause" if pause else "resume", act)

    def _ask(self, question: Text, verb: str, act: Callable[[], str]) -> None:
        """Confirm, then ``act`` in a thread; it returns what to say when it has worked."""
        self.push_screen(ConfirmScreen(question), lambda yes: yes and self._act(verb, act))

    def _each(self, counts: tuple[int, int], verb: str) -> str:
        """Says how many marked jobs were acted on (runs in the action's thread)."""
        acted, skipped = counts
        self.call_from_thread(self.table().clear_marks)
        return f"{_jobs(acted)} {verb}" + (
            f", {skipped} left alone (already in another state)" if skipped else "")

    @work(thread=True, group="act")
    def _act(self, verb: str, act: Callable[[], str]) -> None:
        try:
            said, style = act(), "green"
        except (JobqError, OSError) as e:
            said, style = f"{verb} failed: {e}", "bold red"
        except Exception as e:  # a bug: say it in the footer; the monitor stays up
            said, style = f"{verb} failed: {type(e).__name__}: {e}", "bold red"
        self.call_from_thread(self.say, said, style)
        self.call_from_thread(self.request_poll, True)


def _jobs(n: int, kind: str = "") -> str:
    """``"1 dead job"``, ``"2 dead jobs"``."""
    return f"{n} {kind + ' ' if kind else ''}job{'' if n == 1 else 's'}"
