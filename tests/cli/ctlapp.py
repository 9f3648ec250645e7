"""Handlers and a schedule for the queue-control tests; copied into each test's directory
and run with ``jobq run --app ctlapp``. The schedule's period comes from $CTLAPP_EVERY
(none when unset), so one app serves every test."""
import os
import time

from jobq_core import Backoff, Registry

registry = Registry()
if os.environ.get("CTLAPP_EVERY"):
    registry.periodic("tick", every=float(os.environ["CTLAPP_EVERY"]), queue="ticks")


@registry.task("tick")
def tick(payload, ctx):
    return {"pid": os.getpid()}


@registry.task("span")
def span(payload, ctx):
    """Appends "job_id start end pid" once its sleep is over (O_APPEND: one write)."""
    start = time.time()
    time.sleep(payload.get("sleep", 0))
    end = time.time()
    with open(payload["log"], "a") as f:
        f.write(f"{ctx.job_id} {start:.6f} {end:.6f} {os.getpid()}\n")


@registry.task("flaky_span", backoff=Backoff(base=0.01, cap=0.01))
def flaky_span(payload, ctx):
    """A span that fails its first attempt once recorded: the failure frees its slot
    outside a completion, so every worker's claim loop races for the next job."""
    span(payload, ctx)
    if ctx.attempt == 1:
        raise RuntimeError("first attempt fails")
