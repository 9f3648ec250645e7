"""The preview pane of the rich layout: the highlighted job, below the table.

It reads the job in a thread worker of its own, through the app's ``Source``, and only
when the highlight or the database changed (``show_job``); the widget is touched only on
the event loop. A result that arrives for a highlight already left is dropped.
"""
from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from jobq_core import Clock

from .screens import detail_text
from .source import Source, Unavailable
from .views.cells import literal

PreviewKey = tuple[int | None, int | None]  # (job id, the database's version)


class PreviewPane(VerticalScroll):
    def __init__(self, source: Source, clock: Clock, **kwargs):
        super().__init__(**kwargs)
        self._source = source
        self._clock = clock
        self._key: PreviewKey | None = None
        self._sig: tuple = ()
        self._body: Static | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="preview-body")

    def show_job(self, job_id: int | None, version: int | None) -> None:
        """Show job ``job_id`` (None: nothing) as of the database's ``version``; read it
        again only when either changed."""
        key = (job_id, version)
        if key == self._key:
            return
        self._key = key
        if job_id is None:
            self._show_text(Text(""))
        else:
            self._read_job(key)

    def _show_text(self, text: Text) -> None:
        """Update the preview only when its text changed: a new text for a ``Static`` lays
        the whole screen out again (its height may change), and the preview is read again
        at every change in the database (every heartbeat)."""
        sig = (text.plain, tuple(text.spans))
        if sig == self._sig:
            return
        self._sig = sig
        body = self._body
        if body is None:
            body = self._body = self.query_one("#preview-body", Static)
        # A layout only when the new text's height differs: in a drain the highlighted job
        # changes at every read, and laying the screen out again cost 7-27 ms each time,
        # the text of the same height 0.1 ms (``bench/tui_cpu.py``).
        body.update(text, layout=False)
        width = body.content_region.width
        if not width or body.get_content_height(
                body.size, body.size, width) != body.content_region.height:
            body.refresh(layout=True)

    @work(thread=True, exclusive=True, group="preview", exit_on_error=False,
          description="preview")
    def _read_job(self, key: PreviewKey) -> tuple[PreviewKey, Text]:
        job_id = key[0]
        assert job_id is not None
        try:
            job, attempts = self._source.detail(job_id)
            return key, detail_text(job, attempts, self._clock.now(), job_id)
        except Unavailable as e:
            return key, literal(str(e), "bold red")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if (worker.group == "preview" and event.state == WorkerState.SUCCESS
                and worker.result[0] == self._key):
            self._show_text(worker.result[1])


__all__ = ["PreviewPane"]
