"""The worker runtime: claim -> run handler -> heartbeat -> complete/fail, in N slots.

Threads, what each one owns, and where it lives:

* the caller of ``Worker.run()`` — ``claimer.py``: claims as many jobs as there are free
  slots in one statement (when no completion is waiting to be written) and hands them to
  the executor, which enforces timeouts on each turn; when idle it sleeps on the store's
  change signal (``queue.watch()``). On stop, ``executor.py`` drains: running handlers get
  the grace period, then their jobs are released.
* the pool runs the handlers (``pool.py`` says what a pool does): ``threads.py`` on
  ``jobq-handler-N`` threads and one ``jobq-asyncio`` event loop thread (the default), or
  ``processes.py`` in child processes (``child.py``, forked by ``forkserver.py``, talking
  JSON lines: ``channel.py``), whose sockets and exits ``jobq-processes`` watches, and
  whose ctx calls ``jobq-ctx-call-N`` threads carry out; ``executor.py`` turns what they
  do into ``Outcome`` records (``runs.py``).
* ``jobq-completer`` — ``completer.py``: writes the outcomes posted to the ``Outbox``
  (``outbox.py``), group-committed, together with the claim for the slots they free
  (``complete_and_claim``: one commit, not two).
* ``jobq-heartbeat`` — ``heartbeat.py``: every third of the lease, extends every in-flight
  lease in one transaction (learning which were lost or asked to cancel), beats the worker
  registry, and runs the reaper (``jobq_core/maintenance``) when it is due.

``worker.py`` holds the ``Worker`` class: configuration, start and stop, signals, and the
wiring; ``state.py`` the one object the parts share (the runs, their counters, one lock),
with the worker's metrics (``run_metrics.py``).

Invariants: a job's lease is extended until its outcome is written; a run whose lease was
lost, that timed out, or that was released is *abandoned*: whatever its handler returns
later is discarded, and the store's fencing token rejects it anyway (a process pool also
stops the child that runs it). Delivery is at-least-once; handlers must be idempotent,
except in their writes to the queue's own database when they complete the job in the same
transaction (``ctx.complete(conn=...)``): the completer then reads the job to learn
whether that transaction committed.
"""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .worker import Worker
else:
    # Hidden from the type checker, which would otherwise take any misspelt name of the
    # package for what this returns; it sees Worker through the import above.
    def __getattr__(name: str) -> object:
        # The Worker (its threads, claimer, completer, pools) loads on first use: a
        # process pool's fork server and children import this package for ``child.py``
        # and ``runs.py`` alone, and would otherwise pay a third of their import time.
        if name == "Worker":
            from .worker import Worker

            return Worker
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Worker"]

