"""The outbox: finished runs whose outcome waits for the completer (``completer.py``).

The executor posts to it when a handler ends; the claimer asks it whether completions are on
their way (they will claim for the slots they free); the completer drains it.
"""
from __future__ import annotations

import threading

from .runs import Run, Succeeded
from .state import State


class Outbox:
    """Runs whose outcome waits for the completer, in the order they finished.

    ``cv`` is a condition on the state's lock, so a finishing handler takes one lock, not
    two. The completer sleeps on it until a first outcome arrives, or, while it groups a
    slow commit, until the last running handler has finished: no other outcome wakes it.
    """

    def __init__(self, state: State):
        self._state = state
        self.cv = threading.Condition(state.lock)
        self.runs: list[Run] = []
        self.succeeded = 0  # runs in the outbox with a Succeeded outcome
        self.writing = False  # the completer holds outcomes it has not written yet
        self.closed = False  # no more outcomes will come: the completer ends once it is empty

    def post(self, run: Run) -> None:
        with self.cv:
            self.post_locked(run)

    def post_locked(self, run: Run) -> None:
        """Hand ``run``'s outcome to the completer, which wakes the claim loop once it is
        written (the slot counts as free from now on, but its job is not finished yet).
        The caller holds the state's lock."""
        self.runs.append(run)
        if isinstance(run.outcome, Succeeded):
            self.succeeded += 1
        if len(self.runs) == 1 or not self._state.running:
            self.cv.notify()

    def completions_pending(self) -> bool:
        """Whether completions are waiting to be written, or being written: the next
        write will claim for the slots they free, so the claim loop need not."""
        return self.writing or self.succeeded > 0
