"""Every table command in an 80-column terminal (and a pipe), as a subprocess with
COLUMNS=80: ids whole, statuses as words, the least useful columns dropped or cut first."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time

import pytest

from jobq_core import Queue

BIG_ID = 18_446_744  # an id as wide as a busy queue's
TRACEBACK = ("Traceback (most recent call last):\n  File \"billing.py\", line 7, in send\n"
             "RuntimeError: billing API returned HTTP 502 for invoice INV-59476")


def jobq(cwd, *args, columns=80):
    env = {**os.environ, "COLUMNS": str(columns)}
    env.pop("JOBQ_DB", None)
    return subprocess.run([sys.executable, "-m", "jobq_cli.main", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def busy_db(db):
    with Queue(db, max_attempts=3) as q:
        q.register_worker("ip-10-0-1-23.ec2.internal-31337-ab12", host="ip-10-0-1-23.ec2.internal",
                          pid=31337, queues=["billing-emails", "mail"], concurrency=8,
                          beat_interval=10, lease=30)
        for i in range(3):
            q.enqueue("billing.invoice.send_payment_reminder", {"i": i}, queue="billing-emails")
        job = q.claim("ip-10-0-1-23.ec2.internal-31337-ab12")
        q.fail(job.id, job.token, TRACEBACK, retry_in=0)
        q.claim("ip-10-0-1-23.ec2.internal-31337-ab12")
    conn = sqlite3.connect(db)
    conn.execute("UPDATE jobq_jobs SET id=? WHERE id=1", (BIG_ID,))
    conn.execute("UPDATE jobq_attempts SET job_id=? WHERE job_id=1", (BIG_ID,))
    conn.commit()
    conn.close()
    return db


def lines_fit(out: str, width: int = 80) -> list[str]:
    lines = out.splitlines()
    assert lines and all(len(line) <= width for line in lines), out
    return lines


@pytest.mark.parametrize("status", [None, "pending", "retrying", "running"])
def test_list_at_80_columns_shows_every_id_whole_and_statuses_as_words(app_dir, busy_db,
                                                                        status):
    args = ["list", "--db", busy_db] + (["--status", status] if status else [])
    r = jobq(app_dir, *args)
    assert r.returncode == 0, r.stderr
    lines = lines_fit(r.stdout)
    assert lines[0].split()[:2] == ["ID", "STATUS"]
    rows = [line.split() for line in lines[2:]]
    ids = {row[0] for row in rows}
    expected = {"pending": {str(BIG_ID), "3"}, "retrying": {str(BIG_ID)}, "running": {"2"}}.get(
        status, {str(BIG_ID), "2", "3"})
    assert ids == expected
    words = {" ".join(row[1:3]) for row in rows}
    assert words <= {"○ pending", "↻ retrying", "▶ running"} and words
    assert "…" not in " ".join(row[0] for row in rows)


def test_list_shows_the_exception_line_of_a_traceback_not_its_first_line(app_dir, busy_db):
    r = jobq(app_dir, "list", "--status", "retrying", "--db", busy_db, columns=200)
    assert "Traceback" not in r.stdout
    assert "RuntimeError: billing API returned HTTP 502 for invoice INV-59476" in r.stdout
    narrow = jobq(app_dir, "list", "--status", "retrying", "--db", busy_db).stdout
    # cut in the middle: the exception type and the end that tells failures apart stay
    assert "Runtime" in narrow and "INV-59476" in narrow


def test_show_at_80_columns_keeps_each_attempts_number_start_and_duration(app_dir, busy_db):
    r = jobq(app_dir, "show", str(BIG_ID), "--db", busy_db)
    assert r.returncode == 0, r.stderr
    lines = lines_fit(r.stdout)
    head = next(i for i, line in enumerate(lines) if line.startswith("#"))
    assert lines[head].split()[:4] == ["#", "OUTCOME", "STARTED", "TOOK"]
    first = lines[head + 2].split()
    assert first[:2] == ["1", "failed"] and first[2:4] == ["0s", "ago"]
    assert first[4].endswith("ms") or first[4].endswith("s")


def test_workers_at_80_columns_shows_the_whole_id_and_a_state_column(app_dir, busy_db):
    r = jobq(app_dir, "workers", "--db", busy_db)
    assert r.returncode == 0, r.stderr
    lines = lines_fit(r.stdout)
    assert lines[0].split()[:2] == ["WORKER", "STATE"]
    assert lines[2].split()[:3] == ["ip-10-0-1-23.ec2.internal-31337-ab12", "●", "ok"]


def test_stats_at_80_columns_fits(app_dir, busy_db):
    r = jobq(app_dir, "stats", "--db", busy_db)
    assert r.returncode == 0, r.stderr
    assert "billing-emails" in "\n".join(lines_fit(r.stdout))


def test_an_id_wider_than_the_terminal_allows_is_still_whole(app_dir, busy_db):
    r = jobq(app_dir, "list", "--db", busy_db, columns=12)
    assert str(BIG_ID) in r.stdout and "↻ retrying" in r.stdout


def test_the_same_durations_are_accepted_everywhere(app_dir, db):
    before = time.time()
    r = jobq(app_dir, "enqueue", "k", "--delay", "1h30m", "--json", "--db", db)
    assert r.returncode == 0, r.stderr
    with Queue(db) as q:
        run_at = q.get(json.loads(r.stdout)["id"]).run_at
    assert before + 5400 <= run_at <= time.time() + 5400
    for args in (["stats", "--window", "90s"], ["prune", "--older-than", "1.5"],
                 ["prune", "--older-than", "2w", "--dry-run"]):
        assert jobq(app_dir, *args, "--db", db).returncode == 0, args
    bad = jobq(app_dir, "stats", "--window", "ninety", "--db", db)
    assert bad.returncode == 2 and bad.stderr.startswith("jobq: stats: ")
    assert "bad duration 'ninety'" in bad.stderr and bad.stderr.count("\n") == 1


@pytest.mark.parametrize("args", [["list", "--bogus"], ["show", "abc"], ["nosuchcommand"],
                                  ["retry", "1", "--all-dead"]])
def test_a_usage_error_is_one_short_line_and_exit_status_2(app_dir, db, args):
    Queue(db).close()
    r = jobq(app_dir, *args, "--db", db)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("jobq: ") and r.stderr.count("\n") == 1 and r.stdout == ""
    assert "╭" not in r.stderr and "Usage:" not in r.stderr


def test_help_has_no_type_noise_after_flags(app_dir):
    for command in ("list", "enqueue", "prune", "workers", "retry"):
        out = jobq(app_dir, command, "--help").stdout
        assert "<bool>" not in out and "╭" not in out, command
        assert "--json" in out


def test_an_enqueue_that_meets_a_live_unique_key_says_so(app_dir, db):
    first = jobq(app_dir, "enqueue", "k", '{"v": 1}', "--unique-key", "u1", "--json", "--db", db)
    assert json.loads(first.stdout) == {"id": 1, "existing": False} and first.stderr == ""
    again = jobq(app_dir, "enqueue", "k", '{"v": 2}', "--unique-key", "u1", "--db", db)
    assert again.returncode == 0 and again.stdout == "1\n"
    assert "already holds unique key 'u1'" in again.stderr and "not stored" in again.stderr
    again = jobq(app_dir, "enqueue", "k", '{"v": 2}', "--unique-key", "u1", "--json", "--db", db)
    assert json.loads(again.stdout) == {"id": 1, "existing": True}
    with Queue(db) as q:
        assert q.get(1).payload == {"v": 1}


def test_prune_keeps_dead_jobs_unless_asked_and_says_what_it_deleted(app_dir, db):
    with Queue(db, max_attempts=1) as q:
        for kind in ("ok", "bad"):
            q.enqueue(kind)
        for job in q.claim_many("w", 2):
            if job.kind == "ok":
                q.complete(job.id, job.token)
            else:
                q.fail(job.id, job.token, "boom")
        q.enqueue("newest")
    dry = jobq(app_dir, "prune", "--older-than", "0", "--dry-run", "--db", db)
    assert dry.stdout == ("would delete 1 job(s) finished over 0s ago (1 succeeded, "
                          "0 cancelled); nothing deleted (--dry-run)\n"
                          "kept 1 dead job(s) as old (--dead deletes them too)\n")
    assert jobq(app_dir, "prune", "--older-than", "0", "--db", db).stdout.startswith(
        "deleted 1 job(s) finished over 0s ago (1 succeeded, 0 cancelled)\nkept 1 dead")
    with Queue(db) as q:
        assert [j.kind for j in q.list("dead")] == ["bad"]
    assert jobq(app_dir, "prune", "--older-than", "0", "--dead", "--db", db).stdout == (
        "deleted 1 job(s) finished over 0s ago (0 succeeded, 1 dead, 0 cancelled)\n")
