"""OpenTelemetry: producer spans on enqueue, consumer spans per run that continue the
enqueue's trace (through the trace context stored with the job), messaging attributes,
read back from the SDK's in-memory exporter, on SQLite and PostgreSQL; nothing traced,
stored (or imported) otherwise."""
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

from stores import AppDB  # noqa: E402


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel.instrument(tracer_provider=provider)
    exporter.provider = provider  # the handlers' own spans go to the same exporter
    yield exporter
    otel.uninstrument()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_queue(request):
    """A queue on each store."""
    return request.getfixturevalue("queue" if request.param == "sqlite" else "pg_queue")


def _consumers(spans) -> list:
    return [s for s in spans.get_finished_spans() if s.kind is SpanKind.CONSUMER]


def _producers(spans) -> list:
    return [s for s in spans.get_finished_spans() if s.kind is SpanKind.PRODUCER]


def _is_child_of(run, producer) -> bool:
    """``run`` continues ``producer``'s trace as its child, with a link to it too."""
    return (run.context.trace_id == producer.context.trace_id
            and run.parent.span_id == producer.context.span_id
            and [link.context.span_id for link in run.links] == [producer.context.span_id])


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


def test_a_run_is_the_child_of_its_enqueue_in_the_requests_trace(spans, any_queue):
    r = Registry()
    r.task("k")(lambda p: None)
    with spans.provider.get_tracer("web").start_as_current_span("GET /orders") as request:
        job_id = any_queue.enqueue("k", queue="mail")
    (producer,) = _producers(spans)
    assert producer.parent.span_id == request.get_span_context().span_id
    stored = any_queue.get(job_id).trace_context
    assert stored == f"00-{producer.context.trace_id:032x}-{producer.context.span_id:016x}-" \
                     f"{producer.context.trace_flags:02x}"
    drain(any_queue, r)
    (run,) = _consumers(spans)
    assert _is_child_of(run, producer)
    assert run.attributes["messaging.message.id"] == str(job_id)


def test_every_attempt_of_a_retried_job_is_a_child_of_the_same_enqueue(spans, any_queue):
    r = Registry()

    @r.task("flaky", backoff=Backoff(base=1, cap=1))
    def flaky(payload, ctx):
        if ctx.attempt < 3:
            raise RuntimeError(f"attempt {ctx.attempt}")

    any_queue.enqueue("flaky")
    (producer,) = _producers(spans)
    drain(any_queue, r, clock=any_queue.clock)
    runs = _consumers(spans)
    assert [(s.attributes["messaging.jobq.attempt"], s.status.status_code) for s in runs] == [
        (1, StatusCode.ERROR), (2, StatusCode.ERROR), (3, StatusCode.UNSET)]
    assert all(_is_child_of(run, producer) for run in runs)


def test_batches_chains_groups_and_task_enqueues_are_parents_of_their_runs(spans, any_queue):
    r = Registry()
    task = r.task("k")(lambda p: p)
    r.task("sum")(lambda p: None)
    batch = any_queue.enqueue_many([("k", 1), {"kind": "k", "payload": 2, "key": "c7"}])
    chain = any_queue.chain([("k", 3), ("k", 4)])
    group, then = any_queue.group([("k", 5)], then=("sum", None))
    one = task.enqueue(any_queue, 6)
    producers = _producers(spans)
    assert [(s.name, s.attributes["messaging.operation.name"],
             s.attributes.get("messaging.batch.message_count")) for s in producers] == [
        ("send", "enqueue_many", 2), ("send", "chain", 2), ("send", "group", 2),
        ("send default", "enqueue", None)]
    drain(any_queue, r)
    runs = {int(s.attributes["messaging.message.id"]): s for s in _consumers(spans)}
    made_by = dict.fromkeys(batch, producers[0]) | dict.fromkeys(chain, producers[1]) | \
        dict.fromkeys([*group, then], producers[2]) | {one: producers[3]}
    assert set(runs) == set(made_by)
    assert all(_is_child_of(runs[i], made_by[i]) for i in made_by)


def test_an_enqueue_in_the_applications_transaction_is_traced_the_same(spans, any_queue):
    r = Registry()
    r.task("k")(lambda p: None)
    with AppDB(any_queue.database) as app:
        job_id = any_queue.enqueue("k", conn=app.conn)
        app.commit()
    (producer,) = _producers(spans)
    drain(any_queue, r)
    (run,) = _consumers(spans)
    assert _is_child_of(run, producer) and run.attributes["messaging.message.id"] == str(job_id)


def test_a_worker_runs_each_job_in_its_enqueues_trace(spans, any_queue):
    r = Registry()
    r.task("sync")(lambda p: p)

    @r.task("async")
    async def run_async(payload):
        return payload

    any_queue.enqueue("sync", 1)
    any_queue.enqueue("async", 2)
    producers = {s.attributes["messaging.jobq.kind"]: s for s in _producers(spans)}
    with Queue(any_queue.database) as q:  # the worker's own clock: the jobs are due
        Worker(q, r, concurrency=2).run(burst=True, handle_signals=False)
    runs = {s.attributes["messaging.jobq.kind"]: s for s in _consumers(spans)}
    assert set(runs) == {"sync", "async"}
    assert all(_is_child_of(runs[kind], producers[kind]) for kind in runs)


def test_with_tracing_off_nothing_is_stored_and_a_run_starts_a_trace_of_its_own(
        spans, any_queue):
    otel.uninstrument()
    job_id = any_queue.enqueue("k")
    [other] = any_queue.enqueue_many([("k", 2)])
    assert any_queue.get(job_id).trace_context is None
    assert any_queue.get(other).trace_context is None
    otel.instrument(tracer_provider=spans.provider)
    r = Registry()
    r.task("k")(lambda p: None)
    drain(any_queue, r)
    runs = _consumers(spans)
    assert len(runs) == 2 and all(s.parent is None and not s.links for s in runs)


@pytest.mark.parametrize("stored", ["not a trace context", "00-" + "0" * 32 + "-" + "0" * 16
                                    + "-01", 42])
def test_a_stored_value_that_is_no_trace_context_starts_a_trace_of_its_own(spans, queue,
                                                                           stored):
    """Another program wrote the column (SQLite keeps any value in any column)."""
    job_id = queue.enqueue("k")
    with AppDB(str(queue.database)) as app:
        app.execute("UPDATE jobq_jobs SET trace_context=? WHERE id=?", (stored, job_id))
        app.commit()
    r = Registry()
    r.task("k")(lambda p: None)
    assert [o.status for o in drain(queue, r)] == ["succeeded"]
    (run,) = _consumers(spans)
    assert run.parent is None and not run.links


def test_jobq_copy_carries_the_trace_context_to_the_other_store(spans, queue, pg_url):
    from typer.testing import CliRunner

    from jobq_cli.main import app

    queue.enqueue("k")
    (producer,) = _producers(spans)
    result = CliRunner().invoke(app, ["copy", "--from", str(queue.database), "--to", pg_url])
    assert result.exit_code == 0, result.output
    r = Registry()
    r.task("k")(lambda p: None)
    with Queue(pg_url) as target:
        assert target.get(1).trace_context == queue.get(1).trace_context
        drain(target, r)
    (run,) = _consumers(spans)
    assert _is_child_of(run, producer)


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
                                    "job": s.attributes.get("messaging.message.id"),
                                    "trace": s.context.trace_id,
                                    "parent": s.parent and s.parent.span_id}) + "\\n")
        return SpanExportResult.SUCCESS


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(FileExporter()))
otel.instrument(tracer_provider=provider)
registry = Registry()
registry.task("k")(lambda p: os.getpid())
'''


@pytest.mark.slow  # real processes or the real clock: seconds
@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_a_process_pools_children_trace_their_own_runs_in_their_enqueues_trace(
        spans, tmp_path, store, request):
    import json
    import os

    (tmp_path / "otel_app.py").write_text(OTEL_APP)
    spans_file = tmp_path / "spans.jsonl"
    db = str(tmp_path / "jobs.db") if store == "sqlite" else request.getfixturevalue("pg_url")
    with Queue(db) as q:
        ids = [q.enqueue("k", i) for i in range(4)]
    producers = {int(s.attributes["messaging.message.id"]): s for s in _producers(spans)}
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
    assert sorted((int(r["job"]), r["trace"], r["parent"]) for r in runs) == [
        (i, producers[i].context.trace_id, producers[i].context.span_id) for i in ids]
