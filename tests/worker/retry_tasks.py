"""Handlers for the retry-control tests. A process pool's children import this module by
name, so the registry is a module-level name (``worker.retry_tasks:registry``)."""
from __future__ import annotations

from jobq_core import Backoff, GiveUp, Registry, Retry

registry = Registry()
# A retry waits (a day at most, full jitter): never ready again within a burst worker's run.
LATER = Backoff(base=86400.0, cap=86400.0)


@registry.task("net", retry_on=(ConnectionError, TimeoutError), max_attempts=3, backoff=LATER)
def net(payload):
    raise {"conn": ConnectionError("reset by peer"),
           "value": ValueError(f"bad invoice {payload.get('n', 1234)}")}[payload["raise"]]


@registry.task("strict", no_retry_on=ValueError, max_attempts=3, backoff=LATER)
def strict(payload):
    raise {"key": KeyError("missing"), "value": ValueError("bad input")}[payload["raise"]]


@registry.task("later", max_attempts=2)
def later(payload):
    raise Retry("rate limited", delay=payload.get("delay", 30))


@registry.task("hopeless", max_attempts=5)
def hopeless(payload):
    raise GiveUp("the account is closed")
