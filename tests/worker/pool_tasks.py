"""Handlers for the process-pool tests. Child processes import this module by name, so the
registry is a module-level name (the worker finds it as ``worker.pool_tasks:registry``)."""
import asyncio
import os
import signal
import sys
import time
from pathlib import Path

from jobq_core import Backoff, LeaseLost, Registry

registry = Registry()
QUICK = Backoff(base=0.01, cap=0.01)


def _tell_pid(ctx) -> None:
    """The child's pid, where the test can read it: the job's progress message."""
    ctx.progress(0.0, str(os.getpid()))


@registry.task("burn")
def burn(payload):
    """Pure-Python work until this thread has used ``cpu`` seconds of CPU: the share of a
    core it got is ``cpu / (end - start)``."""
    wall, cpu = time.time(), time.thread_time()
    while time.thread_time() - cpu < payload["cpu"]:
        pass
    return {"pid": os.getpid(), "start": wall, "end": time.time(),
            "cpu": time.thread_time() - cpu}


@registry.task("pid")
def pid(payload, ctx):
    return {"pid": os.getpid(), "job": ctx.job_id, "attempt": ctx.attempt,
            "worker": ctx.worker_id}


@registry.task("nap")
def nap(payload, ctx):
    _tell_pid(ctx)
    time.sleep(payload.get("s", 0))
    return os.getpid()


@registry.task("spin", timeout=1, max_attempts=1)
def spin(payload, ctx):
    _tell_pid(ctx)
    while True:
        pass


@registry.task("stubborn", timeout=0.5, max_attempts=1)
def stubborn(payload, ctx):
    """Ignores SIGTERM: only SIGKILL stops it."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _tell_pid(ctx)
    while True:
        time.sleep(0.01)


@registry.task("exit", max_attempts=2, backoff=QUICK)
def exit_now(payload):
    os._exit(3)


@registry.task("segv", max_attempts=1)
def segv(payload):
    os.kill(os.getpid(), signal.SIGSEGV)


@registry.task("sys.exit", max_attempts=1)
def sys_exit(payload):
    sys.exit(3)


@registry.task("boom", max_attempts=1)
def boom(payload):
    raise ValueError(f"boom {payload}")


@registry.task("not-json", max_attempts=1)
def not_json(payload):
    return {1, 2}


@registry.task("ctx")
def ctx_task(payload, ctx):
    ctx.heartbeat()
    ctx.progress(0.5, "halfway")
    try:
        ctx.progress(2.0)
    except ValueError as e:
        refused = str(e)
    return {"job": ctx.job_id, "attempt": ctx.attempt, "worker": ctx.worker_id,
            "kind": ctx.kind, "cancelled": ctx.cancelled.is_set(), "refused": refused}


@registry.task("cancellable")
def cancellable(payload, ctx):
    _tell_pid(ctx)
    if ctx.cancelled.wait(10):
        raise RuntimeError("stopped on request")
    return "finished anyway"


@registry.task("lease-lost")
def lease_lost(payload, ctx):
    """Waits for the file ``go``, then heartbeats; records what it learnt in ``seen``."""
    _tell_pid(ctx)
    go = Path(payload["go"])
    while not go.exists():
        time.sleep(0.01)
    try:
        ctx.heartbeat()
    except LeaseLost:
        Path(payload["seen"]).write_text(f"LeaseLost cancelled={ctx.cancelled.is_set()}")
        raise
    return "zombie result"


@registry.task("aio")
async def aio(payload):
    await asyncio.sleep(0.01)
    return {"double": payload * 2, "pid": os.getpid(),
            "loop": id(asyncio.get_running_loop())}


@registry.task("tidy", timeout=0.5, max_attempts=1)
def tidy(payload, ctx):
    """Runs past its timeout; its ``finally`` block leaves a file behind."""
    _tell_pid(ctx)
    try:
        while True:
            time.sleep(0.01)
    finally:
        Path(payload["file"]).write_text(f"cleaned up, cancelled={ctx.cancelled.is_set()}")


@registry.task("add_deps")
def add_deps(payload, ctx):
    """Its payload plus the results of the jobs it waited on (a chain's running total)."""
    return payload + sum(ctx.dependency_results().values())


@registry.task("snoozy", max_attempts=1)
def snoozy(payload, ctx):
    """Snoozes (not counted as an attempt) until it has run ``times`` times (counted in the
    file ``path``), then returns how many runs it took and its attempt number."""
    with open(payload["path"], "a+") as f:
        f.write("run\n")
        f.seek(0)
        runs = len(f.readlines())
    if runs < payload["times"]:
        ctx.snooze(0)
    return [runs, ctx.attempt]


@registry.task("unstorable", max_attempts=1)
def unstorable(payload):
    """An error text no JSON line, and no database, takes as it is (a lone surrogate)."""
    raise ValueError("file-\udcff")


@registry.task("big")
def big(payload):
    """A result of ``n`` characters as JSON (the string's quotes included)."""
    return "x" * (payload["n"] - 2)
