"""The demo's task registry and job mix: what a small web shop's background work looks
like. Handlers sleep instead of working; the flaky and failing ones fail on purpose.

Also usable on its own: ``jobq run --app jobq_cli.demo_tasks``.
"""
from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from typing import Any

from jobq_core import Backoff, JobContext, Registry

registry = Registry()
_QUICK_RETRY = Backoff(base=0.5, cap=3.0)


def _nap(ctx: JobContext, seconds: float, steps: int = 1, what: str = "") -> None:
    """Sleep in steps, reporting progress, and stop early when told to."""
    for i in range(steps):
        if ctx.cancelled.wait(seconds / steps):
            raise RuntimeError("stopped: cancelled, lease lost or shutting down")
        if steps > 1:
            ctx.progress((i + 1) / steps, f"{what} {i + 1}/{steps}" if what else None)


@registry.task("email.send")
def send_email(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    _nap(ctx, random.uniform(0.05, 0.4))
    return {"message_id": f"<{ctx.job_id}.{ctx.attempt}@demo.jobq>", "to": payload.get("to")}


@registry.task("alert.page")
def page_oncall(payload: dict[str, Any]) -> str:
    time.sleep(random.uniform(0.02, 0.1))
    return f"paged {payload.get('team', 'ops')}"


@registry.task("image.resize")
def resize_image(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    sizes = payload.get("sizes", [64, 256, 1024])
    _nap(ctx, random.uniform(0.5, 2.0), steps=len(sizes), what="size")
    return {"image": payload.get("image"), "sizes": sizes}


@registry.task("report.build", timeout=60.0)
def build_report(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    _nap(ctx, random.uniform(4.0, 9.0), steps=8, what="section")
    return {"report": payload.get("name"), "rows": random.randint(100, 5000)}


@registry.task("video.transcode")
async def transcode(payload: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(random.uniform(1.0, 3.0))
    return {"video": payload.get("video"), "format": "av1"}


@registry.task("webhook.deliver", max_attempts=5, backoff=_QUICK_RETRY)
def deliver_webhook(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    _nap(ctx, random.uniform(0.05, 0.3))
    if ctx.attempt < payload.get("fail_times", 1) + 1:
        raise ConnectionError(f"POST {payload.get('url')}: connection reset by peer")
    return {"status": 200, "attempt": ctx.attempt}


@registry.task("invoice.sync", max_attempts=3, backoff=_QUICK_RETRY)
def sync_invoice(payload: dict[str, Any], ctx: JobContext) -> None:
    _nap(ctx, random.uniform(0.1, 0.4))
    raise RuntimeError(f"billing API returned HTTP 502 for invoice {payload.get('invoice')}")


@registry.task("sessions.expire")
def expire_sessions(payload: dict[str, Any]) -> dict[str, Any]:
    time.sleep(0.05)
    return {"expired": random.randint(0, 40)}


@registry.task("cache.refresh")
def refresh_cache(payload: dict[str, Any]) -> dict[str, Any]:
    time.sleep(0.1)
    return {"refreshed": payload.get("cache")}


# Periodic jobs (the monitor's Schedules view): every worker takes part, each tick is
# enqueued once.
registry.periodic("cache.refresh", every=10, payload={"cache": "prices"})
registry.periodic("report.build", cron="0 6 * * *", queue="reports",
                  payload={"name": "daily-sales"})


def job_mix(n: int, rng: random.Random) -> list[dict[str, Any]]:
    """``n`` jobs in a realistic mix of kinds, queues, priorities and delays."""
    makers: list[tuple[int, Callable[[int], dict[str, Any]]]] = [
        (30, lambda i: {"kind": "email.send", "queue": "mail",
                        "payload": {"to": f"user{i}@example.com", "template": "receipt"}}),
        (15, lambda i: {"kind": "image.resize", "queue": "media",
                        "payload": {"image": f"uploads/{i}.jpg", "sizes": [64, 256, 1024]}}),
        (3, lambda i: {"kind": "report.build", "queue": "reports",
                       "payload": {"name": f"sales-{i}"}}),
        (4, lambda i: {"kind": "video.transcode", "queue": "media",
                       "payload": {"video": f"clips/{i}.mp4"}}),
        (12, lambda i: {"kind": "webhook.deliver", "payload": {
            "url": f"https://hooks.example.com/{i}", "fail_times": rng.choice([1, 1, 2])}}),
        (4, lambda i: {"kind": "invoice.sync", "payload": {"invoice": f"INV-{1000 + i}"}}),
        (4, lambda i: {"kind": "alert.page", "priority": 10,
                       "payload": {"team": rng.choice(["ops", "payments", "search"])}}),
        (5, lambda i: {"kind": "sessions.expire", "delay": rng.uniform(3.0, 15.0),
                       "payload": {"older_than": "30d"}}),
    ]
    weights = [w for w, _ in makers]
    picks = rng.choices([m for _, m in makers], weights=weights, k=n)
    return [make(rng.randrange(100_000)) for make in picks]
