"""A worker's /metrics server: nothing the port receives can hurt the worker. Connections
past the cap are closed at once, a silent one is closed after the read timeout, a trickling
one at its deadline; the worker's own series are bounded whatever kinds and queues its
database holds."""
from __future__ import annotations

import socket
import time
from types import SimpleNamespace
import urllib.request

import pytest

from jobq_core import Queue, Registry, Worker
from jobq_core.observability.metric_names import MAX_QUEUE_LABELS, OTHER_LABEL
from jobq_core.observability.prometheus import MetricsServer
from jobq_core.worker.run_metrics import RunMetrics

pytest.importorskip("prometheus_client")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402


@pytest.fixture
def worker(db):
    r = Registry()
    r.task("known")(lambda p: None)
    with Queue(db) as q:
        yield Worker(q, r, concurrency=1)


@pytest.fixture
def serve(worker):
    servers = []

    def start(**limits) -> MetricsServer:
        servers.append(MetricsServer(worker, **limits).start())
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def _half_sent(port: int) -> socket.socket:
    c = socket.create_connection(("127.0.0.1", port), timeout=10)
    c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # never the blank line
    return c


def _closed_within(c: socket.socket, seconds: float) -> float:
    """Seconds until the server closed ``c``; fails if it stays open past ``seconds``."""
    start = time.monotonic()
    c.settimeout(seconds)
    try:
        while c.recv(4096):
            pass
    except TimeoutError:
        pytest.fail(f"the connection was still open after {seconds}s")
    except ConnectionResetError:
        pass
    return time.monotonic() - start


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


ONE_STORE = pytest.mark.stores("sqlite", why="the server's socket handling reads no store")


@ONE_STORE
def test_a_connection_that_sends_half_a_request_is_closed_after_the_read_timeout(serve):
    s = serve(read_timeout=0.5, deadline=30)
    c = _half_sent(s.port)
    assert _closed_within(c, 5) < 3
    assert "jobq_jobs" in _scrape(s.port)


@ONE_STORE
def test_connections_past_the_cap_are_closed_at_once_and_scrapes_resume_after(serve):
    s = serve(max_connections=4, read_timeout=1.5, deadline=30)
    idle = [_half_sent(s.port) for _ in range(4)]
    time.sleep(0.2)
    extra = _half_sent(s.port)
    assert _closed_within(extra, 1) < 0.5  # refused, not queued behind the idle ones
    for c in idle:
        _closed_within(c, 5)
    assert "jobq_jobs" in _scrape(s.port)


@ONE_STORE
def test_a_request_trickled_a_byte_at_a_time_is_cut_at_the_deadline(serve):
    s = serve(read_timeout=1.0, deadline=1.5)
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    start = time.monotonic()
    for byte in b"GET /metrics HTTP/1.1\r\nX-Slow: " + b"a" * 100:
        try:
            c.sendall(bytes([byte]))
        except OSError:
            break
        c.settimeout(0.3)
        try:
            if c.recv(1) == b"":
                break
        except TimeoutError:
            continue
        except OSError:
            break
    took = time.monotonic() - start
    assert took < 4, f"the trickle went on for {took:.1f}s"
    assert "jobq_jobs" in _scrape(s.port)


def _outcome_labels(text: str) -> set[tuple[str, str]]:
    for family in text_string_to_metric_families(text):
        if family.name == "jobq_job_outcomes":
            return {(s.labels["queue"], s.labels["kind"]) for s in family.samples}
    return set()


def test_kinds_without_a_handler_in_this_worker_are_counted_under_one_label(db, serve, producer):
    r = Registry()
    r.task("known")(lambda p: None)
    producer.enqueue("known")
    producer.enqueue_many([{"kind": f"stranger-{i}", "max_attempts": 1} for i in range(30)])
    with Queue(db) as q:
        w = Worker(q, r, concurrency=2)
        w.run(burst=True, handle_signals=False)
        s = MetricsServer(w).start()
        try:
            labels = _outcome_labels(_scrape(s.port))
        finally:
            s.close()
    assert labels == {("default", "known"), ("default", OTHER_LABEL)}
    assert w.run_metrics().outcomes[("default", OTHER_LABEL, "dead")] == 30


def test_queues_past_the_cap_are_counted_under_one_label():
    def run(queue: str, ran_for: float | None):  # what RunMetrics.ended reads of a Run
        return SimpleNamespace(job=SimpleNamespace(queue=queue, kind="k"), ran_for=ran_for)

    m = RunMetrics(kinds=["k"])
    m.ended([run(f"q{i}", 0.1) for i in range(MAX_QUEUE_LABELS + 50)], "succeeded")
    m.ended([run("q0", None)], "succeeded")  # a queue seen before the cap keeps its label
    queues = {q for q, _, _ in m.outcomes}
    assert len(queues) == MAX_QUEUE_LABELS + 1 and OTHER_LABEL in queues
    assert m.outcomes[("q0", "k", "succeeded")] == 2
    assert m.outcomes[(OTHER_LABEL, "k", "succeeded")] == 50
    assert m.durations[(OTHER_LABEL, "k")][-1] == pytest.approx(5.0)
