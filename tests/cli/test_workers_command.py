"""``jobq workers`` at 80 columns: each worker's STATE judged by the heartbeat interval it
recorded, silent workers forgotten after the documented time, ``--forget-lost``."""
from __future__ import annotations

import json
import re
import time

import pytest

from jobq_core import FORGET_AFTER, Queue
from jobq_core.testing import FakeClock

from .terminal import jobq, table

# (id, its recorded beat, seconds since its last beat): the margins to the late (1.5
# beats) and lost (2.5 beats) lines are wide enough for a slow subprocess start.
WORKERS = [
    ("beats-10s-just-seen", 10.0, 2.0),      # ok
    ("beats-60s-silent-100s", 60.0, 100.0),  # late: 1.5 to 2.5 of its beats (50 s from lost)
    ("beats-10s-silent-40s", 10.0, 40.0),    # lost: 4 of its beats
    ("beats-60s-silent-40s", 60.0, 40.0),    # ok: as silent, but it beats every minute
    ("beat-unrecorded-silent-40s", None, 40.0),  # lost: judged by the default 10 s
    ("beats-10s-silent-10m", 10.0, FORGET_AFTER + 300),  # forgotten: not listed
]
STATES = {"beats-10s-just-seen": "ok", "beats-60s-silent-100s": "late",
          "beats-10s-silent-40s": "lost", "beats-60s-silent-40s": "ok",
          "beat-unrecorded-silent-40s": "lost"}


def registered(db, only: set[str] | None = None) -> float:
    """Registers WORKERS (or those named in ``only``) as of now; returns now."""
    now = time.time()
    clock = FakeClock(now)
    with Queue(db, clock=clock) as q:
        for worker_id, beat, silent in WORKERS:
            if only is not None and worker_id not in only:
                continue
            clock.set(now - silent)
            q.register_worker(worker_id, host="ip-10-0-1-23.ec2.internal", pid=4242,
                              queues=None, concurrency=8, beat_interval=beat,
                              lease=None if beat is None else 3 * beat)
    return now


@pytest.mark.slow  # seconds of real time (processes, connections, clocks)
def test_workers_judges_each_by_its_own_beat_and_no_longer_lists_the_long_silent(app_dir, db):
    at = registered(db)
    r = jobq(app_dir, "workers", "--db", db)
    took = time.time() - at
    assert r.returncode == 0, r.stderr
    header, rows = table(r.stdout, "WORKER")
    assert header[:3] == ["WORKER", "STATE", "LAST SEEN"]
    glyph = {"ok": "●", "late": "◐", "lost": "✗"}
    assert {row[0]: row[1] for row in rows} == {
        worker_id: f"{glyph[state]} {state}" for worker_id, state in STATES.items()}
    seen = {row[0]: row[2] for row in rows}
    age = re.fullmatch(r"(\d+)s ago", seen["beats-10s-silent-40s"])  # an age, not a time
    assert age and 40 <= int(age[1]) <= 40 + took + 1, (seen, took)
    # The beats again, so that the margins above cover one command's start (seconds on a
    # loaded machine), not two.
    registered(db)
    listed = json.loads(jobq(app_dir, "workers", "--json", "--db", db).stdout)
    assert {w["id"]: w["state"] for w in listed} == STATES
    assert {w["id"]: w["beat_interval"] for w in listed}["beats-60s-silent-40s"] == 60.0


@pytest.mark.slow  # real processes or the real clock: seconds
def test_workers_forget_lost_deletes_the_lost_entries_and_says_which(app_dir, db):
    registered(db)
    r = jobq(app_dir, "workers", "--forget-lost", "--db", db)
    assert r.returncode == 0, r.stderr
    said, _, names = r.stderr.rstrip("\n").partition(": ")
    assert said == "forgot 2 lost worker(s)" and "\n" not in names
    assert set(names.split(", ")) == {"beats-10s-silent-40s", "beat-unrecorded-silent-40s"}
    _, rows = table(r.stdout, "WORKER")
    assert {row[0] for row in rows} == {"beats-10s-just-seen", "beats-60s-silent-100s",
                                        "beats-60s-silent-40s"}
    with Queue(db) as q:
        kept = {w.id for w in q.workers(forgotten=True)}
    assert "beats-10s-silent-40s" not in kept and "beats-60s-silent-100s" in kept
    registered(db, only={"beats-10s-just-seen"})  # (its margin covers one command, not three)
    again = jobq(app_dir, "workers", "--forget-lost", "--json", "--db", db)
    assert json.loads(again.stdout)["forgotten"] == [] and again.stderr == ""


@pytest.mark.slow
def test_a_lost_workers_jobs_say_so_on_their_rows_and_its_busy_is_marked_stale(app_dir, db):
    registered(db)
    with Queue(db) as q:
        ids = [q.enqueue("report.build", {"n": n}) for n in range(3)]
        for worker_id in ("beats-10s-silent-40s", "beats-10s-silent-40s", "beats-10s-just-seen"):
            q.claim(worker_id)
    r = jobq(app_dir, "list", "--status", "running", "--db", db)
    assert r.returncode == 0, r.stderr
    header, rows = table(r.stdout, "ID")
    assert header[-2:] == ["WORKER", "PRI"]
    workers = {row[0]: row[-2] for row in rows}
    for job_id in ids[:2]:  # at 80 columns its name is cut in the middle, never its state
        assert re.fullmatch(r"beats-1\S*…\S*40s ✗ lost", workers[str(job_id)])
    assert workers[str(ids[2])] == "beats-10s-just-seen"
    wide = jobq(app_dir, "list", "--status", "running", "--db", db, columns=120).stdout
    assert wide.count("beats-10s-silent-40s ✗ lost") == 2
    _, rows = table(jobq(app_dir, "workers", "--db", db).stdout, "WORKER")
    busy = {row[0]: row[3] for row in rows}
    # it beat last with nothing running; it is known to hold two jobs, and nobody counts
    assert busy["beats-10s-silent-40s"] == "2/8 stale"
    assert busy["beats-10s-just-seen"] == "0/8"  # its own last beat's count
