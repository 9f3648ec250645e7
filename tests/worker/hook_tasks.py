"""Handlers and hooks for the hook tests. A process pool's children import this module by
name (``worker.hook_tasks:registry``), so a hook writes what it saw as a JSON line to the
file the job's payload names ("log"), where the test reads it, whichever process it ran in."""
from __future__ import annotations

import asyncio
import contextvars
import json
import os
import threading

from jobq_core import GiveUp, Registry, Retry

registry = Registry()
request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id",
                                                                        default=None)


def _raise(payload) -> None:
    if payload.get("raise") == "giveup":
        raise GiveUp("no such customer")
    if payload.get("raise") == "retry":
        raise Retry(delay=60)
    if payload.get("raise") == "value":
        raise ValueError("bad input")


@registry.task("hooked", max_attempts=2)
def hooked(payload):
    _raise(payload)
    return {"n": payload.get("n"), "request": request_id.get(),
            "thread": threading.current_thread().name}


@registry.task("hooked.async", max_attempts=2)
async def hooked_async(payload):
    await asyncio.sleep(0)
    _raise(payload)
    return {"n": payload.get("n"), "request": request_id.get(),
            "thread": threading.current_thread().name}


def write(payload, record: dict) -> None:
    record.update(pid=os.getpid(), thread=threading.current_thread().name)
    with open(payload["log"], "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


@registry.before_run
def before(job, ctx):
    request_id.set(f"req-{job.id}")  # the handler sees it (the request-context guide)
    write(job.payload, {"hook": "before", "job": job.id, "ctx": ctx.job_id,
                        "attempt": job.attempts, "kind": job.kind})
    if job.payload.get("hook_raises"):
        raise RuntimeError("before_run broke")


@registry.after_run
async def after(job, ctx, outcome):  # an async hook: on a loop of its own for a sync handler
    write(job.payload, {"hook": "after", "job": job.id, "ctx": ctx.job_id,
                        "status": str(outcome.status), "failed": outcome.failed,
                        "result": outcome.result, "retry_in": outcome.retry_in,
                        "error": (outcome.error or "").split("\n", 1)[0] or None})
    if job.payload.get("hook_raises"):
        raise RuntimeError("after_run broke")


@registry.on_dead
def dead(job, ctx, error):
    write(job.payload, {"hook": "dead", "job": job.id, "error": error.split("\n", 1)[0]})
    if job.payload.get("hook_raises"):
        raise RuntimeError("on_dead broke")
