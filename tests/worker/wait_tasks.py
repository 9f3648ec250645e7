"""Handlers for the tests of waiting for a job and of stopping a running one. Child
processes of a process pool import this module by name (``worker.wait_tasks:registry``)."""
import asyncio
import os
import time

from jobq_core import Registry

registry = Registry()


def _tell_pid(ctx) -> None:
    """The pid running the handler, where the test reads it: the job's progress message."""
    ctx.progress(0.0, str(os.getpid()))


@registry.task("echo")
def echo(payload):
    return {"echo": payload}


@registry.task("boom", max_attempts=1)
def boom(payload):
    raise ValueError(f"boom {payload}")


@registry.task("nap")
def nap(payload, ctx):
    _tell_pid(ctx)
    ctx.cancelled.wait(payload)
    return "woke"


@registry.task("spin")
def spin(payload, ctx):
    """CPU-bound for ``payload`` seconds, deaf to ctx.cancelled: only a signal stops it."""
    _tell_pid(ctx)
    end = time.monotonic() + payload
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


@registry.task("asleep")
async def asleep(payload, ctx):
    _tell_pid(ctx)
    try:
        await asyncio.sleep(payload)
    except asyncio.CancelledError:
        with open(os.environ.get("JOBQ_TEST_CANCELLED", os.devnull), "a") as f:
            f.write(f"{ctx.job_id}\n")
        raise
    return "woke"
