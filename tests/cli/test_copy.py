"""``jobq copy`` between SQLite and PostgreSQL, both ways: what it says it copied and
skipped (the summary line, ``--json``), and its refusal of a second copy."""
from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from jobq_cli.main import app
from jobq_core import Queue, Registry
from jobq_core.testing import FakeClock

runner = CliRunner()


def jobq(*args):
    return runner.invoke(app, list(args), catch_exceptions=False)


def _a_queue_to_move(db: str) -> str:
    """A pending job, a running job whose worker died an hour ago (its lease long run out,
    no reaper since), a job keyed k-1, a paused queue and a schedule; the schedule's key."""
    clock = FakeClock(time.time() - 3600)
    schedule = Registry().periodic("report", every=60)
    with Queue(db, clock=clock) as q:
        q.enqueue("plain", {"n": 1})
        q.enqueue("keyed", unique_key="k-1")
        q.enqueue("lost", queue="work")
        q.claim("gone", queues=["work"], lease=30)
        q.pause("mail")
        q.register_schedule(schedule, since=clock.now())
    return schedule.key


@pytest.fixture(params=["sqlite to postgresql", "postgresql to sqlite"])
def databases(request, pg_url, tmp_path):
    sqlite_db = str(tmp_path / "jobs.db")
    return (sqlite_db, pg_url) if request.param.startswith("sqlite") else (pg_url, sqlite_db)


def test_jobq_copy_json_says_what_it_copied_and_skipped_and_why(databases):
    source, target = databases
    schedule = _a_queue_to_move(source)
    with Queue(target) as q:
        q.enqueue("theirs", unique_key="k-1")
    r = jobq("copy", "--from", source, "--to", target, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == {
        "copied": {"pending": 1, "running": 1, "waiting": 0, "dead": 0},
        "skipped": {"pending": {"unique_key_held": 1}},
        "queues": {"copied": ["mail"], "kept": []},
        "schedules": {"copied": [schedule], "kept": []},
        "through": 3, "resumed": False}
    with Queue(target) as q:
        [lost] = q.list("pending", kind="lost")
        assert (lost.attempts, lost.worker, lost.lease_until) == (1, None, None)
        assert q.queues()["mail"].paused and [s.key for s in q.schedules()] == [schedule]
        assert q.claim("w", queues=["work"]).kind == "lost"  # runnable now


def test_jobq_copy_refuses_a_second_copy_in_one_line_and_changes_nothing(databases):
    source, target = databases
    _a_queue_to_move(source)
    assert jobq("copy", "--from", source, "--to", target).exit_code == 0
    with Queue(source) as q:
        q.enqueue("added since")
        q.set_limit("default", concurrency=1)
    with Queue(target) as q:
        before = sorted((j.id, j.kind, j.status) for j in q.list(limit=100))
    r = jobq("copy", "--from", source, "--to", target)
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "already holds a copy of" in r.stderr
    assert "jobq copy --resume" in r.stderr
    with Queue(target) as q:
        assert sorted((j.id, j.kind, j.status) for j in q.list(limit=100)) == before
        assert q.queues()["default"].concurrency is None
    r = jobq("copy", "--from", source, "--to", target, "--resume", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["copied"]["pending"] == 1 and out["resumed"] is True
    with Queue(target) as q:
        assert [j.kind for j in q.list("pending", kind="added since")] == ["added since"]


def test_jobq_copy_says_in_one_line_what_it_copied_and_why_it_skipped(tmp_path):
    source, target = str(tmp_path / "old.db"), str(tmp_path / "new.db")
    _a_queue_to_move(source)
    with Queue(target) as q:
        q.enqueue("theirs", unique_key="k-1")
        q.set_limit("mail", concurrency=2)
    r = jobq("copy", "--from", source, "--to", target)
    assert r.exit_code == 0, r.output
    assert r.stdout == (
        "copied pending=1 running=1 waiting=0 dead=0; skipped pending=1 (a live job of the "
        "destination holds its unique key); queue controls 0 copied (1 kept the "
        "destination's own: mail); schedules 1 copied\n")
    assert r.stderr == "2 copied, 1 skipped (through job 3)\n"
