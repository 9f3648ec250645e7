"""OpenTelemetry tracing for jobq (``jobq[otel]``): a producer span per enqueue, a
consumer span per run that continues the enqueue's trace, with the messaging semantic
conventions' attributes.

    from jobq_core.contrib import otel
    otel.instrument()                       # the global tracer provider, or tracer_provider=

Nothing is traced until ``instrument()`` is called, and jobq never imports OpenTelemetry
by itself: without the extra, or before the call, an enqueue runs no tracing code (one
test of ``new_jobs.current_trace_context`` per job) and a run costs one test of
``worker.runs.around_handler``.

Spans (names ``{operation} {queue}``):

* ``send <queue>`` (PRODUCER) around ``Queue.enqueue`` (so ``Task.enqueue`` and the
  Django backend too), ``send`` around ``Queue.enqueue_many``, ``Queue.chain`` and
  ``Queue.group`` with the batch's size;
* ``process <queue>`` (CONSUMER) around each run of a handler, on the thread, child
  process or event loop that runs it: the handler's own spans are its children. A failed
  run records the exception and an ERROR status.

Trace context: each job made while instrumented stores the W3C trace context of the span
current then (the producer span, ``Job.trace_context``: ``traceparent``, then a space and
``tracestate`` when there is one). Each run's consumer span is that span's child, with a
link to it too, so a trace runs from the web request through the enqueue to every
attempt of the job. A job enqueued with tracing off stores nothing, and its runs' spans
start from the context current where they run (a root, in a worker).

Attributes: ``messaging.system`` = ``jobq``, ``messaging.destination.name`` (the queue),
``messaging.operation.type`` (``send``/``process``), ``messaging.operation.name``
(``enqueue``/``enqueue_many``/``chain``/``group``/``run``), ``messaging.message.id`` (the
job id), ``messaging.batch.message_count``, and jobq's own ``messaging.jobq.kind`` and
``messaging.jobq.attempt`` (1 on the first run).

A process pool's children trace only if they call ``instrument()`` too: call it in the
module that defines the registry, which every child imports.

Tracing never changes what happens to a job: an error of the tracing itself (a span
processor or exporter that raises on a span's start or end, a propagator that fails) is
logged (``jobq.otel``) and the enqueue or the run goes on as if untraced. Raised from an
enqueue after its commit, it would make a caller that retries enqueue twice; raised around
a handler that returned, it would record a success as a failure and run it again.
"""
from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ..api import new_jobs
from ..queue import Queue
from ..worker import runs

log = logging.getLogger("jobq.otel")

SYSTEM = "jobq"
_BATCHES = {"enqueue_many": len, "chain": len,
            "group": lambda made: len(made[0]) + 1}  # (the group's ids, then's id)
"""The producing methods traced as one ``send`` span per call, and how many jobs each made."""
_W3C = TraceContextTextMapPropagator()
_lock = threading.Lock()
_originals: dict[str, Callable[..., Any]] = {}


def instrument(*, tracer_provider: trace.TracerProvider | None = None) -> None:
    """Start tracing enqueues and runs in this process (again: replaces the provider)."""
    tracer = trace.get_tracer("jobq", tracer_provider=tracer_provider)
    with _lock:
        if not _originals:
            for name in ("enqueue", *_BATCHES):
                _originals[name] = getattr(Queue, name)
        setattr(Queue, "enqueue", _traced_enqueue(tracer, _originals["enqueue"]))
        for name, count in _BATCHES.items():
            setattr(Queue, name, _traced_batch(tracer, name, _originals[name], count))
        new_jobs.current_trace_context = stored_context
        runs.around_handler = functools.partial(_around_handler, tracer)


def uninstrument() -> None:
    """Stop tracing: jobq back as it was before ``instrument()``."""
    with _lock:
        for name, method in _originals.items():
            setattr(Queue, name, method)
        _originals.clear()
        new_jobs.current_trace_context = None
        runs.around_handler = None


class _Guarded:
    """A span's context manager whose own errors are logged, never raised (see the module
    docstring): what the code inside raises passes through unchanged."""

    __slots__ = ("_start", "_entered")

    def __init__(self, start: Callable[[], AbstractContextManager[trace.Span]]):
        self._start = start
        self._entered: AbstractContextManager[trace.Span] | None = None

    def __enter__(self) -> trace.Span:
        try:
            entered = self._start()
            span = entered.__enter__()
        except Exception:  # noqa: BLE001 - tracing's failure must not become the job's
            log.warning("tracing failed to start a span; going on untraced", exc_info=True)
            return trace.INVALID_SPAN
        self._entered = entered
        return span

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._entered is None:
            return
        try:
            self._entered.__exit__(kind, error, tb)
        except Exception as e:  # noqa: BLE001 - as above
            if e is not error:
                log.warning("tracing failed to end a span", exc_info=True)


def _set(span: trace.Span, key: str, value: str | int) -> None:
    try:
        span.set_attribute(key, value)
    except Exception:  # noqa: BLE001 - as in _Guarded
        log.warning("tracing failed to set %s", key, exc_info=True)


def stored_context() -> str | None:
    """The current span's W3C trace context as a job stores it: ``traceparent``, then a
    space and ``tracestate`` when there is one (a ``traceparent`` has no space); None
    outside any span (or when the propagator fails: the job is made untraced)."""
    carrier: dict[str, str] = {}
    try:
        _W3C.inject(carrier)
    except Exception:  # noqa: BLE001 - as in _Guarded
        log.warning("tracing failed to read the trace context", exc_info=True)
        return None
    traceparent = carrier.get("traceparent")
    if traceparent is None:
        return None
    state = carrier.get("tracestate")
    return f"{traceparent} {state}" if state else traceparent


def parent_of(stored: object) -> otel_context.Context | None:
    """The context a run's span starts in: the one a job stored (``stored_context``), or
    None (the current one) when it stored none or what it stored is not a trace context
    (another program wrote the column)."""
    if not isinstance(stored, str):
        return None
    traceparent, _, state = stored.partition(" ")
    carrier = {"traceparent": traceparent, **({"tracestate": state} if state else {})}
    try:
        parent = _W3C.extract(carrier)
        return parent if trace.get_current_span(parent).get_span_context().is_valid else None
    except Exception:  # noqa: BLE001 - as in _Guarded: the run starts a trace of its own
        log.warning("tracing failed to read a job's trace context", exc_info=True)
        return None


def _traced_enqueue(tracer: trace.Tracer, enqueue: Callable[..., int]
                    ) -> Callable[..., int]:
    @functools.wraps(enqueue)
    def traced(self: Queue, kind: str, payload: Any = None, **options: Any) -> int:
        queue = options.get("queue", "default")
        with _Guarded(lambda: tracer.start_as_current_span(
                f"send {queue}", kind=SpanKind.PRODUCER,
                attributes=_attributes(queue, "send", "enqueue", kind=kind))) as span:
            job_id = enqueue(self, kind, payload, **options)
            _set(span, "messaging.message.id", str(job_id))
            return job_id

    return traced


def _traced_batch(tracer: trace.Tracer, name: str, method: Callable[..., Any],
                  count: Callable[[Any], int]) -> Callable[..., Any]:
    @functools.wraps(method)
    def traced(self: Queue, *args: Any, **options: Any) -> Any:
        with _Guarded(lambda: tracer.start_as_current_span(
                "send", kind=SpanKind.PRODUCER,
                attributes={"messaging.system": SYSTEM, "messaging.operation.type": "send",
                            "messaging.operation.name": name})) as span:
            made = method(self, *args, **options)
            _set(span, "messaging.batch.message_count", count(made))
            return made

    return traced


def _around_handler(tracer: trace.Tracer, call: Callable[[], Any], task: Any, ctx: Any,
                    queue: str, trace_context: str | None) -> Any:
    attributes = _attributes(queue, "process", "run", kind=task.kind)
    attributes["messaging.message.id"] = str(ctx.job_id)
    attributes["messaging.jobq.attempt"] = ctx.attempt
    parent = parent_of(trace_context)
    links = None if parent is None else [
        Link(trace.get_current_span(parent).get_span_context())]
    start = functools.partial(tracer.start_as_current_span, f"process {queue}",
                              context=parent, kind=SpanKind.CONSUMER, attributes=attributes,
                              links=links, record_exception=False,
                              set_status_on_exception=False)
    if task.is_async:
        async def traced() -> Any:
            with _Guarded(start) as span:
                try:
                    return await call()
                except BaseException as e:
                    _failed(span, e)
                    raise

        return traced()
    with _Guarded(start) as span:
        try:
            return call()
        except BaseException as e:
            _failed(span, e)
            raise


def _failed(span: trace.Span, e: BaseException) -> None:
    try:
        span.record_exception(e)
        span.set_status(Status(StatusCode.ERROR, f"{type(e).__name__}: {e}"[:200]))
    except Exception:  # noqa: BLE001 - as in _Guarded: the handler's own error goes on
        log.warning("tracing failed to record a run's error", exc_info=True)


def _attributes(queue: str, operation: str, name: str, *, kind: str) -> dict[str, Any]:
    return {"messaging.system": SYSTEM, "messaging.destination.name": queue,
            "messaging.operation.type": operation, "messaging.operation.name": name,
            "messaging.jobq.kind": kind}
