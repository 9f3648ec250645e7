"""The pool interface: where handlers run. The executor hands a pool each run whose handler
should start, and the pool reports how the handler ended to the ``finished`` callback it was
started with. Two pools keep it:

* ``ThreadPool`` (``threads.py``, the default): handlers on daemon threads of the worker
  process, ``async def`` handlers on one event loop thread.
* ``ProcessPool`` (``processes.py``, with ``child.py``): handlers in child processes, one at
  a time each, which can be killed (hard timeouts) and whose crash fails only their own job.

Everything else — claims, leases, heartbeats, timeouts, outcomes, the completer — is the
same for both: the executor decides *when* a run ends (it returned, timed out, lost its
lease, was released), the pool only *where* its handler runs and how it is stopped.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..types import PoolKind
from .runs import Outcome, Run

Finished = Callable[[Run, Outcome], None]


def not_started(*_: object) -> None:
    """A pool's ``finished`` and ``fail`` until ``start`` gives it the worker's."""
    raise RuntimeError("a pool that was not started was told a handler ended or failed")


class Pool(Protocol):
    kind: PoolKind

    def start(self, finished: Finished, fail: Callable[[str], None]) -> None:
        """Get ready to run handlers (a process pool waits for its first child); report each
        handler's end to ``finished``, from any thread. Raises ``JobqError`` when the pool
        cannot start; ``fail(reason)`` stops the worker when it cannot go on later."""

    def run(self, runs: list[Run]) -> None:
        """Start the handlers of ``runs``, one claim's (their tasks and payloads are checked
        already)."""

    def cancel(self, run: Run) -> None:
        """``run.ctx.cancelled`` was set in the worker: let the handler see it."""

    def stop(self, run: Run) -> None:
        """The executor abandoned ``run`` (timed out, lease lost, released): stop its
        handler if the pool can. Whatever the handler reports later is ignored."""

    def close(self) -> None:
        """No more runs: end the pool's threads or processes (after ``stop`` of every run
        still going)."""

    def kill(self) -> None:
        """Exit now (a second signal): end whatever runs at once. Called from a signal
        handler, so it must not wait for a lock."""

    def children(self) -> list[tuple[int, str, int | None]]:
        """(pid, state, job id or None) of each child process; none for threads."""
