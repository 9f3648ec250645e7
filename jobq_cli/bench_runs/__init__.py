"""The measurements behind ``jobq bench``: each builds its own fresh database, times one
workload, then checks it: every job stored, or every job succeeded exactly once.

Each measurement returns a plain dict, its row in ``jobq bench --json``. Every row has
``ok``, ``expected`` (jobs the workload should have stored or finished), ``counted`` (jobs
the database holds in that state afterwards), ``duplicates`` (ids handed out twice, or jobs
completed or run more than once), ``redelivered`` (jobs the database says were claimed
more than once), ``lost`` (expected jobs missing from ``counted``) and ``errors``.

One module per workload group: ``throughput`` (enqueue, batch, drains, the two pools),
``latency``, ``scale`` (backlog, history, limits); ``processes`` starts the benchmark
processes (and says why they never fork from a process with a database open), ``common``
holds the settings and the row every measurement returns.
"""
from .common import BenchError, Note, Row, Settings, ratio, row
from .latency import latency
from .scale import limits, scale_backlog, scale_history
from .throughput import batch, cpu_jobs, drain_api, drain_worker, enqueue, pool_cpu, pool_noop

__all__ = [
    "BenchError", "Note", "Row", "Settings", "batch", "cpu_jobs", "drain_api", "drain_worker",
    "enqueue", "latency", "limits", "pool_cpu", "pool_noop", "ratio", "row", "scale_backlog",
    "scale_history",
]
