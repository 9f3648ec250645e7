"""Prometheus metrics: their names and labels, a stable contract (docs/guides/metrics.md lists them).

Where each part lives: a worker counts its runs in ``worker/run_metrics.py``; the gauges'
read, the text format and a worker's ``/metrics`` server are ``prometheus.py``. This module
imports neither, so the worker can name its outcomes without the exporter.

The metrics:

* read from the database, by ``jobq metrics`` and by every worker's ``/metrics``:
  ``jobq_jobs{queue,status}`` (status ``pending`` — scheduled and retrying included, as in
  ``jobq stats`` — ``running``, ``dead``), ``jobq_queue_lag_seconds{queue}`` (the age of
  the oldest ready job that could run, 0 when none waits: jobs held on purpose are left
  out), ``jobq_queue_held_jobs{queue}`` (ready jobs held on purpose: the queue paused, or
  their key held by ordering or its key limit), ``jobq_queue_paused{queue}`` (1 or 0),
  ``jobq_queue_concurrency_limit{queue}`` and ``jobq_queue_rate_limit{queue}`` (jobs per
  second; both only for queues with that limit), ``jobq_expired_leases`` and
  ``jobq_workers{state}`` (``ok``, ``late``, ``lost``, each worker judged by the heartbeat
  interval it registered, as ``jobq workers`` and the monitor judge it; workers silent
  past their forget time are not counted, as they are not listed); the database's own
  upkeep (``Queue.db_health``): on PostgreSQL ``jobq_db_dead_rows{table}`` (dead row
  versions in each of jobq's tables, the server's estimate) and
  ``jobq_db_oldest_transaction_seconds`` (the age of the oldest open transaction of another
  session of the database holding back vacuum, 0 when none), on SQLite
  ``jobq_db_wal_bytes`` (the size of the WAL file);
* a worker's own, since it started: ``jobq_job_outcomes_total{queue,kind,outcome}`` with
  ``succeeded``, ``failed`` (to be retried), ``dead``, ``lease_lost``, ``timed_out`` (the
  run hit its task's timeout; the job is retried or dead as for any failure), plus
  ``cancelled`` and ``released`` (handed back at shutdown), so that the outcomes add up
  to the runs; and ``jobq_job_duration_seconds{queue,kind}``, a histogram of how long
  handlers ran, observed with each run's outcome, whatever it is. Their labels are
  bounded: a kind without a handler in this worker, a kind beyond ``MAX_KIND_LABELS`` and a
  queue beyond ``MAX_QUEUE_LABELS`` are counted as ``OTHER_LABEL`` (``(other)``).

How the gauges are read (two reads, no write, safe to scrape often): ``prometheus.py``.
The worker counts in ``RunMetrics`` (plain integers under the worker's lock: no import
of ``prometheus_client`` on its hot path); ``prometheus_client`` (the ``metrics`` extra)
is imported only to render or serve them (``prometheus.py``).
"""
from __future__ import annotations

from ..types import WorkerState

# The metric families, by name (the counter's samples get ``_total`` appended).
JOBS = "jobq_jobs"
QUEUE_LAG = "jobq_queue_lag_seconds"
QUEUE_HELD = "jobq_queue_held_jobs"
QUEUE_PAUSED = "jobq_queue_paused"
QUEUE_CONCURRENCY_LIMIT = "jobq_queue_concurrency_limit"
QUEUE_RATE_LIMIT = "jobq_queue_rate_limit"
EXPIRED_LEASES = "jobq_expired_leases"
WORKERS = "jobq_workers"
DB_DEAD_ROWS = "jobq_db_dead_rows"
DB_OLDEST_TRANSACTION = "jobq_db_oldest_transaction_seconds"
DB_WAL_BYTES = "jobq_db_wal_bytes"
JOB_OUTCOMES = "jobq_job_outcomes"
JOB_DURATION = "jobq_job_duration_seconds"

# The statuses of the jobq_jobs gauge (pending counts scheduled and retrying jobs too).
JOB_STATUSES = ("pending", "running", "dead")
WORKER_STATES = tuple(s.value for s in WorkerState)
OUTCOMES = ("succeeded", "failed", "dead", "lease_lost", "timed_out", "cancelled", "released",
            "snoozed")
# A worker's own metrics count a kind it has no handler for, a kind past the first 200 of
# its registry (sorted) and a queue past the first 100 it ran jobs of under this label
# value: the series a worker exports stay bounded whatever its database holds.
OTHER_LABEL = "(other)"
MAX_KIND_LABELS = 200
MAX_QUEUE_LABELS = 100
# Handler durations in seconds: from a no-op to an hour-long job.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
           300.0, 900.0, 3600.0)
