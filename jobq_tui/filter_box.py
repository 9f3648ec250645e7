"""The ``/`` filter box: filter as you type, ``#123`` opens a job, esc closes.

While the box is open every key goes into it, in the order the keys arrived
(``FilterKeys.on_event``). Left to Textual, a burst misorders: printable keys reach the
box through its own queue while its bindings (backspace, arrows, enter) take effect only
when the key comes back up unhandled, after the keys behind it. And a key typed after
enter must reach the table, not the box: enter closes the box at once.

``FilterKeys`` is a mixin of ``MonitorApp``; it needs from its host: ``filter``,
``table()``, ``say()``, ``render_all()``, ``request_poll()``, ``open_job()``,
``_modal_open()`` and ``_main`` (the monitor's own screen).
"""
from __future__ import annotations

from enum import Enum

from rich.text import Text
from textual import events
from textual.binding import BindingsMap
from textual.widget import Widget
from textual.widgets import Input

from jobq_core.presentation.views.filters import Filter, FilterError, job_ref, parse_filter

PLACEHOLDER = 'words  queue:Q kind:K worker:W error:"text"  #123 opens job 123'
OPEN = "-filtering"  # the monitor's screen has this class while the box is open (app.tcss)


class BoxKey(Enum):
    """What a key did to the open box."""

    CLOSE = "close"  # esc
    SUBMIT = "submit"  # enter
    TAKEN = "taken"  # typed, or one of the box's own keys (backspace, arrows, ...)
    PASS = "pass"  # the app's (focus moves, quitting)
    IGNORED = "ignored"


class FilterBox(Input):
    def __init__(self, **kwargs):
        super().__init__(placeholder=PLACEHOLDER, **kwargs)
        # The box's own keys, from its declared bindings (the key that comes first wins,
        # as in Textual's own lookup).
        self._keys = BindingsMap(type(self).BINDINGS).key_to_bindings

    @property
    def is_open(self) -> bool:
        return self.screen.has_class(OPEN)

    def open(self, text: str) -> None:
        self.screen.add_class(OPEN)
        self.value = text
        self.cursor_position = len(text)
        # Focus now, not after the keys already queued: every key after the / belongs in
        # the box (a q must not quit).
        self.screen.set_focus(self, scroll_visible=False)

    def close(self, focus: Widget) -> None:
        """Close, the focus on ``focus`` now: the next key is its."""
        self.screen.remove_class(OPEN)
        self.screen.set_focus(focus, scroll_visible=False)

    async def take(self, event: events.Key) -> BoxKey:
        if event.key == "escape":
            return BoxKey.CLOSE
        if event.key == "enter":
            return BoxKey.SUBMIT
        if event.is_printable and event.character:
            self.insert_text_at_cursor(event.character)
            return BoxKey.TAKEN
        if bindings := self._keys.get(event.key):
            await self.run_action(bindings[0].action)
            return BoxKey.TAKEN
        if event.key in ("tab", "shift+tab", "ctrl+q", "ctrl+c"):
            return BoxKey.PASS
        return BoxKey.IGNORED


class FilterKeys:
    """The app's side of the filter box."""

    _filter_before = Filter()  # the filter to return to after a #123 jump or a bad filter

    def _box(self) -> FilterBox:
        return self._main.query_one("#filter", FilterBox)

    async def on_event(self, event: events.Event) -> None:
        if (isinstance(event, events.Key) and not event.is_forwarded
                and self._main.has_class(OPEN) and not self._modal_open()):
            took = await self._box().take(event)
            if took is BoxKey.CLOSE:
                self._close_filter()
            elif took is BoxKey.SUBMIT:
                self._submit_filter(self._box().value)
            elif took is BoxKey.PASS:
                await super().on_event(event)  # the app's own: focus moves, quitting
            return
        await super().on_event(event)

    def on_input_changed(self, event: Input.Changed) -> None:
        """Filter as you type: each change that parses is applied at once (a half-typed
        quote waits, saying why)."""
        if event.input.id != "filter" or not self._main.has_class(OPEN):
            return
        if job_ref(event.value) is not None:
            self.say("enter opens that job")
            return
        try:
            filt = parse_filter(event.value)
        except FilterError as e:
            self.say(str(e), "dim")
            return
        self.message = Text()
        if filt != self.filter:
            self.filter = filt
            self.render_all()
            self.request_poll()

    def _submit_filter(self, value: str) -> None:
        job_id = job_ref(value)
        if job_id is not None:  # #123: open that job; the filter stays as it was
            self._close_filter()
            self.filter = self._filter_before
            self.render_all()
            self.request_poll()
            self.open_job(job_id)
            return
        try:
            self.filter = parse_filter(value)
        except FilterError as e:  # the box stays open to fix it; what was typed is not kept
            self.filter = self._filter_before
            self.render_all()
            self.request_poll()
            self.say(str(e), "bold red")
            return
        self._close_filter()
        self.render_all()
        self.request_poll()

    def _close_filter(self) -> None:
        self._box().close(self.table())

    def action_filter(self) -> None:
        self._filter_before = self.filter
        self._box().open(self.filter.text)

    def action_clear_filter(self) -> None:
        if self._box().has_focus:
            self._close_filter()
            return
        if self.table().marked:
            self.table().clear_marks()
            self.say("marks cleared")
            return
        if not self.filter.empty:
            self.filter = Filter()
            self.say("filter cleared")
            self.request_poll()


__all__ = ["BoxKey", "FilterBox", "FilterKeys"]
