"""The Prometheus exporter: the queue's gauges read from the database, the text format, and a
worker's ``/metrics`` server (which also answers the health checks ``/healthz`` and
``/readyz``: ``health.py``). The metric names and labels are ``metrics.py``'s contract.

Reading the gauges is ``Queue.stats`` (one read snapshot of four counts over partial
indexes; finished jobs are not counted), ``Queue.workers`` and ``Queue.db_health`` (the
server's statistics views, or two pragmas and the WAL file's size): no write, no lock held past
the read, safe to scrape every few seconds from many places. A worker's server reads them
on a read-only connection of its own, so a scrape never waits on, or holds up, its work.
``prometheus_client`` (the ``metrics`` extra) is imported only when rendering or serving.
"""
from __future__ import annotations

import http.server
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..common.db_health import DbHealth
from ..errors import JobqError
from .health import Health, liveness, readiness
from .metric_names import (
    BUCKETS, DB_DEAD_ROWS, DB_OLDEST_TRANSACTION, DB_WAL_BYTES, EXPIRED_LEASES, JOB_DURATION, JOB_OUTCOMES, JOB_STATUSES, JOBS,
    QUEUE_CONCURRENCY_LIMIT, QUEUE_HELD, QUEUE_LAG, QUEUE_PAUSED, QUEUE_RATE_LIMIT,
    WORKER_STATES, WORKERS,
)
from ..types import DEFAULT_BEAT

if TYPE_CHECKING:
    from ..queue import Queue
    from ..worker import Worker
    from ..worker.run_metrics import RunMetrics

log = logging.getLogger("jobq.metrics")


# -- the queue's state ----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class QueueGauges:
    jobs: dict[tuple[str, str], int]  # (queue, status) -> jobs
    lag: dict[str, float]  # queue -> seconds the oldest ready job that could run has waited
    held: dict[str, int]  # queue -> ready jobs held on purpose (paused, a held key)
    expired_leases: int
    workers: dict[str, int]  # state -> workers
    paused: dict[str, int]  # queue -> 1 when paused, else 0
    concurrency: dict[str, int]  # queue -> its concurrency limit (limited queues only)
    rate: dict[str, float]  # queue -> jobs per second its rate limit allows (those only)
    db: DbHealth | None = None  # the database's own upkeep


def read_gauges(queue: Queue, *, beat: float = DEFAULT_BEAT) -> QueueGauges:
    """The gauges' values: three reads, no write."""
    stats = queue.stats(window=0.0)  # finished jobs: an empty index range, none read
    workers = queue.workers()
    now = queue.clock.now()
    jobs, lag, held, paused, concurrency, rate = {}, {}, {}, {}, {}, {}
    for name, q in stats.queues.items():
        for status in JOB_STATUSES:
            jobs[(name, status)] = getattr(q, status)
        oldest = q.oldest_pending_at
        lag[name] = 0.0 if oldest is None else max(0.0, stats.now - oldest)
        held[name] = q.held
        paused[name] = int(q.paused)
        if q.concurrency is not None:
            concurrency[name] = q.concurrency
        if q.rate is not None:
            rate[name] = q.rate.limit / q.rate.per
    states = dict.fromkeys(WORKER_STATES, 0)
    for w in workers:
        states[w.state(now, beat).value] += 1
    return QueueGauges(jobs, lag, held, stats.expired_leases, states, paused, concurrency,
                       rate, queue.db_health())


# -- the server -------------------------------------------------------------------------

# What one worker's /metrics server allows (see MetricsServer): a Prometheus server scrapes
# with one connection at a time, so 16 leave room for several of them and a curl.
MAX_CONNECTIONS = 16
PROBE_TIMEOUT = 2.0  # seconds /readyz waits for the database (a probe answers in time)
READ_TIMEOUT = 5.0  # seconds a connection may stay silent
DEADLINE = 30.0  # seconds a connection may stay open at all

# What socketserver hands a server for one request (typeshed's _RequestType); a TCP server
# such as this one always gets the connection's socket.
_Request = socket.socket | tuple[bytes, socket.socket]


class _CappedServer(http.server.ThreadingHTTPServer):
    """ThreadingHTTPServer with a cap on open connections and a deadline for each.

    The cap is checked as a connection is accepted: beyond it, the connection is closed
    at once, so the worker's descriptors and threads stay bounded whatever arrives. The
    deadline is enforced from ``serve_forever``'s loop (``service_actions``): a connection
    past it is shut down, which ends its handler's blocked read or write."""

    daemon_threads = True
    block_on_close = False
    # Connections waiting in the kernel to be accepted cost the worker nothing; a backlog
    # of 5 (socketserver's) made a burst of clients wait a second each for a SYN resent.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int],
                 handler: type[http.server.BaseHTTPRequestHandler], *, family: int,
                 max_connections: int, deadline: float):
        self.address_family = family
        self._cap = max_connections
        self._deadline = deadline
        self._open: dict[socket.socket, float] = {}  # connection -> when it must be gone
        self._open_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: _Request, client_address: object) -> None:
        assert isinstance(request, socket.socket)  # see _Request
        with self._open_lock:
            full = len(self._open) >= self._cap
            if not full:
                self._open[request] = time.monotonic() + self._deadline
        if full:
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except RuntimeError:  # no thread to be had: the connection goes, the worker stays
            self.shutdown_request(request)

    def shutdown_request(self, request: _Request) -> None:
        with self._open_lock:
            if isinstance(request, socket.socket):  # see _Request
                self._open.pop(request, None)
        super().shutdown_request(request)

    def service_actions(self) -> None:
        now = time.monotonic()
        with self._open_lock:
            late = [c for c, until in self._open.items() if until <= now]
        for conn in late:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: _Request, client_address: object) -> None:
        # A client that went away mid-answer, or was cut at its deadline: not the worker's
        # problem, and no traceback on its stderr.
        log.debug("metrics: a connection from %s ended badly", client_address, exc_info=True)


# -- Prometheus -----------------------------------------------------------------------------

def _families(gauges: QueueGauges | None, runs: RunMetrics | None) -> Iterator[Any]:
    from prometheus_client.core import (
        CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily,
    )

    if gauges is not None:
        f = GaugeMetricFamily(JOBS, "Jobs by queue and status (pending includes "
                              "scheduled and retrying).", labels=["queue", "status"])
        for (queue, status), n in sorted(gauges.jobs.items()):
            f.add_metric([queue, status], n)
        yield f
        f = GaugeMetricFamily(QUEUE_LAG, "Age of the oldest ready job that could run, by "
                              "queue (0 when none is waiting; held jobs left out).",
                              labels=["queue"])
        for queue, seconds in sorted(gauges.lag.items()):
            f.add_metric([queue], seconds)
        yield f
        for name, help_text, values in (
                (QUEUE_HELD, "Ready jobs held on purpose: the queue is paused, or their "
                 "key is held by ordering or its key limit.", gauges.held),
                (QUEUE_PAUSED, "1 while the queue is paused (no worker claims from it).",
                 gauges.paused),
                (QUEUE_CONCURRENCY_LIMIT, "The most jobs of the queue that may run at "
                 "once, for queues with a concurrency limit.", gauges.concurrency),
                (QUEUE_RATE_LIMIT, "Jobs of the queue that may start per second, for "
                 "queues with a rate limit.", gauges.rate)):
            f = GaugeMetricFamily(name, help_text, labels=["queue"])
            for queue, value in sorted(values.items()):
                f.add_metric([queue], value)
            yield f
        yield GaugeMetricFamily(EXPIRED_LEASES, "Running jobs whose lease has run out "
                                "(the reaper has not taken them back yet).",
                                value=gauges.expired_leases)
        f = GaugeMetricFamily(WORKERS, "Registered workers by how recently they beat.",
                              labels=["state"])
        for state in WORKER_STATES:
            f.add_metric([state], gauges.workers.get(state, 0))
        yield f
        yield from _db_families(gauges.db)
    if runs is not None:
        counter = CounterMetricFamily(JOB_OUTCOMES, "Runs of this worker by queue, kind "
                                      "and outcome.", labels=["queue", "kind", "outcome"])
        for (queue, kind, outcome), n in sorted(runs.outcomes.items()):
            counter.add_metric([queue, kind, outcome], n)
        yield counter
        histogram = HistogramMetricFamily(JOB_DURATION, "How long this worker's handlers "
                                          "ran, by queue and kind.", labels=["queue", "kind"])
        for (queue, kind), h in sorted(runs.durations.items()):
            cumulative: float = 0
            buckets = []
            for bound, in_bucket in zip([*map(_bound, BUCKETS), "+Inf"], h[:-1]):
                cumulative += in_bucket
                buckets.append((bound, cumulative))
            histogram.add_metric([queue, kind], buckets, h[-1])
        yield histogram


def _db_families(db: DbHealth | None) -> Iterator[Any]:
    from prometheus_client.core import GaugeMetricFamily

    if db is None:
        return
    if db.store == "sqlite":
        if db.wal_bytes is not None:
            yield GaugeMetricFamily(DB_WAL_BYTES, "Size of the SQLite database's WAL file "
                                    "(it grows while a long reader holds back checkpoints).",
                                    value=db.wal_bytes)
        return
    f = GaugeMetricFamily(DB_DEAD_ROWS, "Dead row versions in each of jobq's tables "
                          "(PostgreSQL's estimate; vacuum makes room of them).",
                          labels=["table"])
    for table, n in sorted(db.dead_rows().items()):
        f.add_metric([table], n)
    yield f
    yield GaugeMetricFamily(DB_OLDEST_TRANSACTION, "Age of the oldest open transaction of "
                            "another session of the database, which holds back vacuum "
                            "(0 when none).", value=db.oldest_transaction or 0.0)


def _bound(seconds: float) -> str:
    return repr(float(seconds))


class _Collector:
    def __init__(self, read: Callable[[], tuple[QueueGauges | None, RunMetrics | None]]):
        self._read = read

    def collect(self) -> Iterator[Any]:
        yield from _families(*self._read())


def render(gauges: QueueGauges | None, runs: RunMetrics | None = None) -> bytes:
    """The Prometheus text format of ``gauges`` and ``runs``."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(lambda: (gauges, runs)))
    return generate_latest(registry)


def queue_metrics(queue: Queue, *, beat: float = DEFAULT_BEAT) -> bytes:
    """``jobq metrics``: the queue's gauges in the Prometheus text format."""
    return render(read_gauges(queue, beat=beat))


class MetricsServer:
    """``/metrics`` over HTTP for one worker, on a thread of its own, until ``close``:
    the worker's run counts, and the queue's gauges read on a read-only connection of
    the server's own (opened on the first scrape). A scrape whose database read fails
    still gets the run counts, and the failure is logged.

    Nothing the port receives may hurt the worker: at most ``max_connections`` are open
    at once (one thread and one descriptor each; a connection beyond them is closed as
    soon as it is accepted), a connection that sends nothing for ``read_timeout`` seconds
    is closed, and so is one still open ``deadline`` seconds after it was accepted (a
    request trickled in a byte at a time). One request per connection (HTTP/1.0)."""

    def __init__(self, worker: Worker, host: str = "127.0.0.1", port: int = 0, *,
                 beat: float = DEFAULT_BEAT, max_connections: int = MAX_CONNECTIONS,
                 read_timeout: float = READ_TIMEOUT, deadline: float = DEADLINE):
        from prometheus_client import CONTENT_TYPE_LATEST

        self._worker = worker
        self._beat = beat
        self._reader: Queue | None = None
        self._lock = threading.Lock()
        self._probe: Queue | None = None  # /readyz's own connection: never behind a scrape
        self._probe_lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            timeout = read_timeout  # StreamRequestHandler sets it on the socket

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                path = self.path.split("?")[0]
                if path in ("/healthz", "/readyz"):
                    health = server.health(path == "/readyz")
                    self._send(200 if health.ok else 503, "application/json",
                               json.dumps(health.json()).encode())
                    return
                if path not in ("/metrics", "/"):
                    self.send_error(404, "only /metrics, /healthz and /readyz are served here")
                    return
                self._send(200, CONTENT_TYPE_LATEST, server.scrape())

            def _send(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                # scrapes every few seconds: not logged
                pass

        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._httpd = _CappedServer((host, port), Handler, family=family,
                                    max_connections=max_connections, deadline=deadline)
        bound, self.port = self._httpd.server_address[:2]
        assert isinstance(bound, str)  # getsockname() of an IP socket: the host as text
        self.host = bound
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": min(0.5, deadline / 4)},
                                        name="jobq-metrics", daemon=True)

    def start(self) -> MetricsServer:
        self._thread.start()
        return self

    def scrape(self) -> bytes:
        return render(self._gauges(), self._worker.run_metrics())

    def health(self, ready: bool) -> Health:
        """``/healthz`` (``ready`` False): the worker's loops turn. ``/readyz``: the
        database answers, on a connection of the probe's own that waits 2 s at most, and
        its schema is current; a worker stopping is not ready."""
        from ..queue import Queue

        if not ready:
            return liveness(self._worker)
        with self._probe_lock:
            try:
                if self._probe is None:
                    self._probe = Queue(self._worker.queue.database, read_only=True,
                                        busy_timeout=PROBE_TIMEOUT)
            except JobqError as e:
                return Health(False, {"database": {"ok": False, "error": str(e)[:500]}})
            health = readiness(self._probe)
        if self._worker.stopping:
            return Health(False, {**health.checks, "worker": {"ok": False, "stopping": True}})
        return health

    def _gauges(self) -> QueueGauges | None:
        from ..queue import Queue

        with self._lock:  # one scrape's reads at a time on the reader's connection
            try:
                if self._reader is None:
                    self._reader = Queue(self._worker.queue.database, read_only=True)
                return read_gauges(self._reader, beat=self._beat)
            except JobqError as e:
                log.warning("metrics: reading the queue's gauges failed: %s", e)
                return None

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
        with self._probe_lock:
            if self._probe is not None:
                self._probe.close()
                self._probe = None
