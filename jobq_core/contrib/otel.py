"""OpenTelemetry tracing for jobq (``jobq[otel]``): a producer span per enqueue, a
consumer span per run, with the messaging semantic conventions' attributes.

    from jobq_core.contrib import otel
    otel.instrument()                       # the global tracer provider, or tracer_provider=

Nothing is traced until ``instrument()`` is called, and jobq never imports OpenTelemetry
by itself: without the extra, or before the call, an enqueue runs no tracing code and a
run costs one test of ``worker.runs.around_handler``.

Spans (names ``{operation} {queue}``):

* ``send <queue>`` (PRODUCER) around ``Queue.enqueue`` (so ``Task.enqueue`` and the
  Django backend too), ``send`` around ``Queue.enqueue_many`` with the batch's size;
* ``process <queue>`` (CONSUMER) around each run of a handler, on the thread, child
  process or event loop that runs it: the handler's own spans are its children. A failed
  run records the exception and an ERROR status.

Attributes: ``messaging.system`` = ``jobq``, ``messaging.destination.name`` (the queue),
``messaging.operation.type`` (``send``/``process``), ``messaging.operation.name``
(``enqueue``/``enqueue_many``/``run``), ``messaging.message.id`` (the job id),
``messaging.batch.message_count``, and jobq's own ``messaging.jobq.kind`` and
``messaging.jobq.attempt`` (1 on the first run).

A process pool's children trace only if they call ``instrument()`` too: call it in the
module that defines the registry, which every child imports.

The consumer span is not yet the producer span's child: that needs the producer's trace
context stored with the job, in a column of its own (see the tracing guide).
"""
from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from ..queue import Queue
from ..worker import runs

SYSTEM = "jobq"
_lock = threading.Lock()
_originals: dict[str, Callable] = {}


def instrument(*, tracer_provider: trace.TracerProvider | None = None) -> None:
    """Start tracing enqueues and runs in this process (again: replaces the provider)."""
    tracer = trace.get_tracer("jobq", tracer_provider=tracer_provider)
    with _lock:
        if not _originals:
            _originals["enqueue"] = Queue.enqueue
            _originals["enqueue_many"] = Queue.enqueue_many
        Queue.enqueue = _traced_enqueue(tracer, _originals["enqueue"])
        Queue.enqueue_many = _traced_enqueue_many(tracer, _originals["enqueue_many"])
        runs.around_handler = functools.partial(_around_handler, tracer)


def uninstrument() -> None:
    """Stop tracing: jobq back as it was before ``instrument()``."""
    with _lock:
        if _originals:
            Queue.enqueue = _originals.pop("enqueue")
            Queue.enqueue_many = _originals.pop("enqueue_many")
        runs.around_handler = None


def _traced_enqueue(tracer: trace.Tracer, enqueue: Callable) -> Callable:
    @functools.wraps(enqueue)
    def traced(self: Queue, kind: str, payload: Any = None, **options: Any) -> int:
        queue = options.get("queue", "default")
        with tracer.start_as_current_span(
                f"send {queue}", kind=SpanKind.PRODUCER,
                attributes=_attributes(queue, "send", "enqueue", kind=kind)) as span:
            job_id = enqueue(self, kind, payload, **options)
            span.set_attribute("messaging.message.id", str(job_id))
            return job_id

    return traced


def _traced_enqueue_many(tracer: trace.Tracer, enqueue_many: Callable) -> Callable:
    @functools.wraps(enqueue_many)
    def traced(self: Queue, items: Any, **options: Any) -> list[int]:
        with tracer.start_as_current_span(
                "send", kind=SpanKind.PRODUCER,
                attributes={"messaging.system": SYSTEM, "messaging.operation.type": "send",
                            "messaging.operation.name": "enqueue_many"}) as span:
            ids = enqueue_many(self, items, **options)
            span.set_attribute("messaging.batch.message_count", len(ids))
            return ids

    return traced


def _around_handler(tracer: trace.Tracer, call: Callable[[], Any], task: Any, ctx: Any,
                    queue: str) -> Any:
    attributes = _attributes(queue, "process", "run", kind=task.kind)
    attributes["messaging.message.id"] = str(ctx.job_id)
    attributes["messaging.jobq.attempt"] = ctx.attempt
    name = f"process {queue}"
    if task.is_async:
        async def traced() -> Any:
            with tracer.start_as_current_span(name, kind=SpanKind.CONSUMER,
                                              attributes=attributes,
                                              record_exception=False,
                                              set_status_on_exception=False) as span:
                try:
                    return await call()
                except BaseException as e:
                    _failed(span, e)
                    raise

        return traced()
    with tracer.start_as_current_span(name, kind=SpanKind.CONSUMER, attributes=attributes,
                                      record_exception=False,
                                      set_status_on_exception=False) as span:
        try:
            return call()
        except BaseException as e:
            _failed(span, e)
            raise


def _failed(span: trace.Span, e: BaseException) -> None:
    span.record_exception(e)
    span.set_status(Status(StatusCode.ERROR, f"{type(e).__name__}: {e}"[:200]))


def _attributes(queue: str, operation: str, name: str, *, kind: str) -> dict[str, Any]:
    return {"messaging.system": SYSTEM, "messaging.destination.name": queue,
            "messaging.operation.type": operation, "messaging.operation.name": name,
            "messaging.jobq.kind": kind}
