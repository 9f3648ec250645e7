"""Concurrency keys under faults, with four real worker processes (``key_worker.py``) on
both stores: a queue with ``key_concurrency=2`` and one ``ordered``, a handful of keys
each, while workers are SIGKILLed, stopped past their leases (SIGSTOP, then SIGCONT) and,
on PostgreSQL, have their connections killed (``pg_terminate_backend``).

Each accepted run writes its (key, start, end) to a ledger in the same transaction as its
fenced completion, so a zombie's row is refused with its completion. Then: every job ran
to success exactly once; no key ever had more than 2 overlapping runs; the runs of an
ordered key never overlap and come in id order.
"""
from __future__ import annotations

import random
import signal
import subprocess
import time
from collections import defaultdict

import pytest
from app_run import AppRun
from stores import AppDB

from jobq_core import Queue

pytestmark = pytest.mark.slow

LEDGER = ("CREATE TABLE ledger(job_id bigint PRIMARY KEY, queue text NOT NULL, key text, "
          "start_at double precision NOT NULL, end_at double precision NOT NULL, "
          "pid bigint NOT NULL)")
"""What ``key_worker.py`` writes: one row per accepted run."""

LIMIT = 2
KEYS = 5
PER_KEY = 36  # jobs per key in the limited queue (about 3 s of work per key)
PER_ORDERED_KEY = 24  # jobs per key in the ordered queue (about 2.5 s per key)
FAULT_SECONDS = 12.0


class KeyRun(AppRun):
    script = "key_worker.py"

    def __init__(self, tmp_path, db: str):
        super().__init__(tmp_path, db, rows=0)
        self.faults: dict[str, int] = defaultdict(int)
        with AppDB(db) as app:
            app.execute(LEDGER)
            app.commit()

    def stop_past_lease(self, p: subprocess.Popen, seconds: float) -> None:
        """SIGSTOP ``p`` for ``seconds`` (past its lease), then SIGCONT."""
        self.freeze(p)
        time.sleep(seconds)
        p.send_signal(signal.SIGCONT)
        self.faults["sigstop"] += 1

    def kill_connections(self) -> None:
        import psycopg

        name = self.db.rsplit("/", 1)[1]
        with psycopg.connect(self.db, autocommit=True) as c:
            n = c.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                          "WHERE datname=%s AND application_name='jobq' "
                          "AND pid <> pg_backend_pid()", (name,)).fetchone()[0]
        self.faults["pg_terminate_backend"] += n > 0

    def unfinished(self) -> int:
        with Queue(self.db, read_only=True) as q:
            s = q.stats()
            return s.pending + s.running + s.waiting

    def ledger(self) -> list[tuple]:
        with AppDB(self.db) as app:
            rows = app.execute("SELECT job_id, queue, key, start_at, end_at FROM ledger "
                               "ORDER BY start_at").fetchall()
            app.commit()
        return rows


@pytest.fixture(params=["sqlite", "postgresql"])
def run(request, tmp_path):
    db = str(tmp_path / "jobs.db") if request.param == "sqlite" else \
        request.getfixturevalue("pg_url")
    r = KeyRun(tmp_path, db)
    yield r
    r.stop_all()


def most_overlapping(intervals: list[tuple[float, float]]) -> int:
    """The largest number of intervals open at one instant (an end before a start at the
    same instant: touching runs do not overlap)."""
    points = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    most = now = 0
    for _, step in points:
        now += step
        most = max(most, now)
    return most


def _busy_worker(run, workers) -> int:
    """The index of a worker whose job started a moment ago (its handler runs 60 ms or
    more: a SIGKILL now leaves it running, to be reaped and run again)."""
    pids = {p.pid: i for i, p in enumerate(workers)}
    with Queue(run.db) as q:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            now = q.clock.now()
            for job in q.list("running", payloads=False, limit=100):
                parts = (job.worker or "").rsplit("-", 2)
                pid = int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None
                if pid in pids and job.started_at is not None and now - job.started_at < 0.03:
                    return pids[pid]
            time.sleep(0.005)
    raise AssertionError("no worker started a job within 30 s")


def test_key_limits_hold_with_workers_killed_stopped_and_disconnected(run):
    rng = random.Random(25)
    items = []
    for i in range(PER_KEY):
        items += [{"kind": "hold", "queue": "limited", "key": f"k{k}",
                   "payload": {"ms": rng.randint(100, 250), "queue": "limited", "key": f"k{k}"}}
                  for k in range(KEYS)]
    for i in range(PER_ORDERED_KEY):
        items += [{"kind": "hold", "queue": "seq", "key": f"s{k}", "priority": rng.randint(0, 3),
                   "payload": {"ms": rng.randint(60, 160), "queue": "seq", "key": f"s{k}"}}
                  for k in range(KEYS)]
    items += [{"kind": "hold", "queue": "seq", "payload": {"ms": 10, "queue": "seq",
                                                           "key": None}}] * 10
    with Queue(run.db) as q:
        q.set_limit("limited", key_concurrency=LIMIT)
        q.set_limit("seq", ordered=True)
        ids = q.enqueue_many(items)
    opts = [("--concurrency", "4", "--lease", "1"),
            ("--concurrency", "4", "--lease", "1", "--queues", "limited,seq"),
            ("--concurrency", "4", "--lease", "1", "--queues", "limited"),
            ("--concurrency", "4", "--lease", "1")]
    workers = [run.worker(*o) for o in opts]
    postgres = run.db.startswith("postgresql:")
    # The first fault always lands on a run under way (the check at the end that the
    # faults hit running jobs must not rest on the random timing alone).
    i = _busy_worker(run, workers)
    run.kill(workers[i])
    workers[i] = run.worker(*opts[i])
    deadline = time.monotonic() + FAULT_SECONDS
    while time.monotonic() < deadline and run.unfinished():
        time.sleep(rng.uniform(0.3, 0.8))
        i = rng.randrange(len(workers))
        fault = rng.choice(["sigkill", "sigstop"] + ["pg"] * postgres)
        if fault == "sigkill":
            run.kill(workers[i])
            workers[i] = run.worker(*opts[i])
        elif fault == "sigstop":
            run.stop_past_lease(workers[i], rng.uniform(1.2, 2.0))
        else:
            run.kill_connections()
    run.wait_for(lambda: run.unfinished() == 0, 90, "every job to end")
    for p in workers:
        p.terminate()
        p.wait(timeout=30)

    with Queue(run.db) as q:
        jobs = {j.id: j for j in q.list(limit=10 * len(ids), payloads=False)}
    assert {jobs[i].status for i in ids} == {"succeeded"}
    ledger = run.ledger()
    ran = [row[0] for row in ledger]
    assert sorted(ran) == sorted(ids), "every job's accepted run recorded exactly once"
    assert sum(jobs[i].attempts > 1 for i in ids) > 0, "the faults hit running jobs"
    assert run.kills and run.faults["sigstop"], (run.kills, run.faults)

    by_key = defaultdict(list)
    for job_id, queue, key, start, end in ledger:
        if key is not None:
            by_key[queue, key].append((job_id, start, end))
    peaks = {k: most_overlapping([(s, e) for _, s, e in runs])
             for k, runs in by_key.items() if k[0] == "limited"}
    assert max(peaks.values()) == LIMIT, peaks  # the limit was reached, never passed
    for (queue, key), runs in by_key.items():
        if queue != "seq":
            continue
        assert [r[0] for r in runs] == sorted(r[0] for r in runs), f"{key} out of id order"
        for (_, _, end), (_, start, _) in zip(runs, runs[1:]):
            assert end <= start, f"{key}: two runs overlap"
