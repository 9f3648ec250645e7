"""Handlers for the CLI tests; copied into each test's directory and run with
``jobq run --app taskapp`` (the current directory is on the import path)."""
import os
import re
import time

from jobq_core import Backoff, Registry

registry = Registry()
other_name = registry
not_a_registry = 42


@registry.task("record")
def record(payload, ctx):
    """Appends one line per run (O_APPEND: one write, never interleaved)."""
    with open(payload["log"], "a") as f:
        f.write(f"{ctx.job_id} {os.getpid()}\n")
    time.sleep(payload.get("sleep", 0))
    return {"pid": os.getpid()}


@registry.task("nap")
def nap(payload, ctx):
    """Sleeps ``first`` seconds on attempt 1 and ``then`` seconds on later attempts."""
    time.sleep(payload.get("first", 0) if ctx.attempt == 1 else payload.get("then", 0))
    return {"pid": os.getpid(), "attempt": ctx.attempt}


@registry.task("boom", backoff=Backoff(base=0.05, cap=0.05))
def boom(payload):
    raise ValueError(f"boom {payload}")


@registry.task("stuck")
def stuck(payload, ctx):
    """Stuck in C code that holds the GIL (a regex that backtracks for ages): no other thread
    of its process runs until it ends."""
    ctx.progress(0.0, str(os.getpid()))
    return bool(re.match(r"(a+)+$", "a" * 64 + "!"))


@registry.task("slow", timeout=0.3, max_attempts=1)
def slow(payload, ctx):
    """Runs past its timeout (the worker gives up on it at 0.3 s)."""
    ctx.cancelled.wait(5)
