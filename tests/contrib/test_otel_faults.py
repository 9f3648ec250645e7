"""Tracing never changes what happens to a job: a span processor that raises (a broken
exporter wired synchronously) on a span's start or end leaves every enqueue acknowledged
once and every run's outcome as the handler made it, on SQLite and PostgreSQL."""
from __future__ import annotations

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import SpanProcessor, TracerProvider  # noqa: E402

from jobq_core import JobStatus, Registry  # noqa: E402
from jobq_core.contrib import otel  # noqa: E402
from jobq_core.testing import drain  # noqa: E402


class Broken(SpanProcessor):
    def __init__(self, where: str):
        self.where = where

    def on_start(self, span, parent_context=None):
        if self.where == "start":
            raise RuntimeError("exporter down (on_start)")

    def on_end(self, span):
        if self.where == "end":
            raise RuntimeError("exporter down (on_end)")


@pytest.fixture(params=["start", "end"])
def broken_tracing(request):
    provider = TracerProvider()
    provider.add_span_processor(Broken(request.param))
    otel.instrument(tracer_provider=provider)
    yield request.param
    otel.uninstrument()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_queue(request):
    return request.getfixturevalue("queue" if request.param == "sqlite" else "pg_queue")


def test_a_raising_span_processor_changes_no_enqueue(broken_tracing, any_queue):
    job_id = any_queue.enqueue("k", {"n": 1})
    ids = any_queue.enqueue_many([("k", 2), ("k", 3)])
    chained = any_queue.chain([("k", 4), ("k", 5)])
    members, then = any_queue.group([("k", 6)], then=("k", 7))
    assert any_queue.count() == 1 + len(ids) + len(chained) + len(members) + 1
    assert any_queue.get(job_id).payload == {"n": 1} and then > job_id


def test_a_raising_span_processor_changes_no_run(broken_tracing, any_queue):
    calls = []
    registry = Registry()

    @registry.task("ok")
    def ok(payload):
        calls.append(payload)
        return "done"

    @registry.task("fails", max_attempts=1)
    def fails(payload):
        raise ValueError("the handler's own error")

    good, bad = any_queue.enqueue("ok", 1), any_queue.enqueue("fails")
    drain(any_queue, registry)
    assert calls == [1]  # ran once: a success is not turned into a retry
    assert any_queue.get(good).status == JobStatus.SUCCEEDED
    assert any_queue.get(good).result == "done"
    dead = any_queue.get(bad)
    assert dead.status == JobStatus.DEAD and "the handler's own error" in dead.error
