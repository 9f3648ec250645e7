"""OpenTelemetry: producer spans on enqueue, consumer spans per run, messaging attributes,
read back from the SDK's in-memory exporter; nothing traced (or imported) otherwise."""
from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

from jobq_core import Backoff, Queue, Registry, Worker  # noqa: E402
from jobq_core.contrib import otel  # noqa: E402
from jobq_core.testing import drain  # noqa: E402


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel.instrument(tracer_provider=provider)
    exporter.provider = provider  # the handlers' own spans go to the same exporter
    yield exporter
    otel.uninstrument()


def test_an_enqueue_is_a_producer_span_with_the_job_id(spans, queue):
    job_id = queue.enqueue("email.send", {"to": "a"}, queue="mail")
    (span,) = spans.get_finished_spans()
    assert span.name == "send mail" and span.kind is SpanKind.PRODUCER
    assert dict(span.attributes) == {
        "messaging.system": "jobq", "messaging.destination.name": "mail",
        "messaging.operation.type": "send", "messaging.operation.name": "enqueue",
        "messaging.jobq.kind": "email.send", "messaging.message.id": str(job_id)}


def test_a_task_enqueue_and_a_batch_are_traced_too(spans, queue):
    r = Registry()
    task = r.task("k")(lambda p: None)
    task.enqueue(queue, 1)
    queue.enqueue_many([("k", 2), ("k", 3)])
    one, batch = spans.get_finished_spans()
    assert one.attributes["messaging.destination.name"] == "default"
    assert batch.name == "send" and batch.attributes["messaging.batch.message_count"] == 2


def test_each_run_is_a_consumer_span_and_a_failure_is_recorded(spans, queue):
    r = Registry()
    tracer = spans.provider.get_tracer("app")

    @r.task("flaky", backoff=Backoff(base=1, cap=1))
    def flaky(payload, ctx):
        with tracer.start_as_current_span("inside"):
            if ctx.attempt == 1:
                raise RuntimeError("first attempt")

    job_id = queue.enqueue("flaky", queue="jobs")
    spans.clear()
    drain(queue, r, clock=queue.clock)
    runs = [s for s in spans.get_finished_spans() if s.kind is SpanKind.CONSUMER]
    inner = [s for s in spans.get_finished_spans() if s.name == "inside"]
    assert [(s.name, s.attributes["messaging.jobq.attempt"], s.status.status_code)
            for s in runs] == [("process jobs", 1, StatusCode.ERROR),
                               ("process jobs", 2, StatusCode.UNSET)]
    assert runs[0].attributes["messaging.message.id"] == str(job_id)
    assert runs[0].attributes["messaging.operation.type"] == "process"
    assert [e.name for e in runs[0].events] == ["exception"]
    assert "first attempt" in runs[0].events[0].attributes["exception.message"]
    assert [s.parent.span_id for s in inner] == [s.context.span_id for s in runs]


def test_a_worker_traces_sync_and_async_handlers_on_their_own_threads(spans, db_path):
    r = Registry()
    r.task("sync")(lambda p: p)

    @r.task("async")
    async def run_async(payload):
        with spans.provider.get_tracer("app").start_as_current_span("awaited"):
            return payload

    with Queue(db_path) as q:
        q.enqueue("sync", 1)
        q.enqueue("async", 2)
        spans.clear()
        Worker(q, r, concurrency=2).run(burst=True, handle_signals=False)
    finished = spans.get_finished_spans()
    runs = {s.attributes["messaging.jobq.kind"]: s for s in finished if s.kind is SpanKind.CONSUMER}
    assert set(runs) == {"sync", "async"}
    (awaited,) = [s for s in finished if s.name == "awaited"]
    assert awaited.parent.span_id == runs["async"].context.span_id


def test_uninstrument_stops_tracing(spans, queue):
    otel.uninstrument()
    r = Registry()
    r.task("k")(lambda p: None)
    queue.enqueue("k")
    drain(queue, r)
    assert spans.get_finished_spans() == ()


def test_jobq_never_imports_opentelemetry_by_itself(tmp_path):
    code = (
        "import sys\n"
        "from jobq_core import Queue, Registry, Worker\n"
        "from jobq_core.testing import drain\n"
        f"q = Queue({str(tmp_path / 'j.db')!r}); r = Registry(); r.task('k')(lambda p: p)\n"
        "q.enqueue('k', 1); Worker(q, r).run(burst=True, handle_signals=False)\n"
        "print(q.get(1).status, any(m.startswith('opentelemetry') for m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["succeeded", "False"]


OTEL_APP = '''
import json, os
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from jobq_core import Registry
from jobq_core.contrib import otel


class FileExporter(SpanExporter):
    def export(self, spans):
        with open(os.environ["SPANS"], "a") as f:
            for s in spans:
                f.write(json.dumps({"name": s.name, "pid": os.getpid(),
                                    "job": s.attributes.get("messaging.message.id")}) + "\\n")
        return SpanExportResult.SUCCESS


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(FileExporter()))
otel.instrument(tracer_provider=provider)
registry = Registry()
registry.task("k")(lambda p: os.getpid())
'''


@pytest.mark.slow  # real processes or the real clock: seconds
def test_a_process_pools_children_trace_their_own_runs(tmp_path):
    import json
    import os

    (tmp_path / "otel_app.py").write_text(OTEL_APP)
    spans_file = tmp_path / "spans.jsonl"
    db = str(tmp_path / "jobs.db")
    with Queue(db) as q:
        ids = [q.enqueue("k", i) for i in range(4)]
    env = {**os.environ, "SPANS": str(spans_file)}
    subprocess.run([sys.executable, "-m", "jobq_cli.main", "run", "--app", "otel_app",
                    "--pool", "process", "--concurrency", "2", "--burst", "--db", db],
                   cwd=tmp_path, env=env, check=True, capture_output=True, timeout=60)
    with Queue(db) as q:
        handler_pids = {q.get(i).result for i in ids}
    runs = [json.loads(line) for line in spans_file.read_text().splitlines()]
    assert sorted(r["job"] for r in runs) == sorted(str(i) for i in ids)
    assert {r["name"] for r in runs} == {"process default"}
    assert {r["pid"] for r in runs} == handler_pids  # made where the handler ran
