"""A task that takes its whole worker process down, as a segfault would, and one that
works: the poison-job test runs ``jobq run`` on this module."""
import os

from jobq_core import Backoff, Registry

registry = Registry()


@registry.task("crash", backoff=Backoff(base=0.01, cap=0.01))
def crash(payload):
    os._exit(70)


@registry.task("fine")
def fine(payload):
    return "ok"
