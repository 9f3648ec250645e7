"""The question asked before every write action.

Its message is ``Text`` the caller built from numbers, its own words and ``literal``
database text: never markup.
"""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmScreen(ModalScreen[bool]):
    """Asks before a destructive action: ``y`` confirms, ``n`` or esc cancels. Enter
    presses the focused button, ``No`` at first: an enter out of habit does not act."""

    BINDINGS = [
        Binding("y", "answer(True)", "yes"),
        Binding("n,escape", "answer(False)", "no"),
    ]

    def __init__(self, message: Text):
        super().__init__()
        self.message = message

    def compose(self) -> ComposeResult:
        with Grid(id="confirm"):
            yield Static(self.message, id="confirm-message")
            yield Button("Yes (y)", variant="error", id="yes")
            yield Button("No (n)", variant="primary", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
