"""``jobq metrics``: the queue's state in the Prometheus text format, read without writing
(the names are in ``jobq_core.observability.metric_names`` and docs/guides/metrics.md; the exporter is
``jobq_core.observability.prometheus``). ``jobq run --metrics-port`` serves
the same gauges with the worker's own counts; ``serve`` starts that server."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

from .common import (
    DEFAULT_DB, DbOption, Duration, fail, friendly, open_queue, typed, usage,
)

if TYPE_CHECKING:
    from jobq_core import Worker
    from jobq_core.observability.prometheus import MetricsServer

BeatOption = Annotated[float, Duration(
    "The heartbeat interval assumed for a worker that registered none (an older jobq): "
    "late after one missed beat, lost after two. Others are judged by their own.")]


def _need_prometheus_client() -> None:
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        fail("metrics need the prometheus_client package: pip install 'jobq[metrics]'")


@friendly
def metrics(db: DbOption = DEFAULT_DB, beat: BeatOption = typed("10s")) -> None:
    """Print the queue's state in the Prometheus text format: jobq_jobs{queue,status},
    jobq_queue_lag_seconds{queue}, jobq_expired_leases, jobq_workers{state}.

    Reads only (a read-only connection): safe to run every few seconds, e.g. for
    node_exporter's textfile collector."""
    if not beat > 0:
        usage(f"--beat must be more than 0 seconds, got {beat:g}")
    _need_prometheus_client()
    from jobq_core.observability.prometheus import queue_metrics

    with open_queue(db, read_only=True) as q:
        text = queue_metrics(q, beat=beat)
    sys.stdout.buffer.write(text)
    sys.stdout.flush()


def serve(worker: Worker, host: str, port: int) -> MetricsServer:
    """Start serving ``worker``'s /metrics on ``host``:``port`` (0: a free port); the
    caller closes what this returns. Fails with one line when the port is taken."""
    _need_prometheus_client()
    from jobq_core.observability.prometheus import MetricsServer

    try:
        return MetricsServer(worker, host, port).start()
    except OSError as e:
        fail(f"--metrics-port: cannot listen on {host}:{port} ({e.strerror or e})")
