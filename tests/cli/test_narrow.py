"""Every table command in an 80-column terminal and in a pipe with COLUMNS=80, each run as
a subprocess: ids and names whole, statuses as words, the least useful columns dropped or
cut first. The terminal is a pseudo-terminal of 80x24 (no $COLUMNS: the width is the
terminal's own)."""
from __future__ import annotations

import itertools
import json
import os
import re
import sqlite3
import subprocess
import sys
import time

import pytest

from jobq_core import Queue, Registry

from .terminal import jobq, jobq_tty, lines_fit, table

pytestmark = pytest.mark.slow  # every table command run as a process: seconds each

BIG_ID = 18_446_744  # an id as wide as a busy queue's
TRACEBACK = ("Traceback (most recent call last):\n  File \"billing.py\", line 7, in send\n"
             "RuntimeError: billing API returned HTTP 502 for invoice INV-59476")
WORKER = "ip-10-0-1-23.ec2.internal-31337-ab12"
LONG_QUEUE = "billing-emails-for-the-european-union"


@pytest.fixture(params=["pipe", "tty"])
def run(request):
    """Runs a jobq command at 80 columns: in a pipe (COLUMNS=80) or on a terminal."""
    if request.param == "pipe":
        return jobq

    def on_a_terminal(*args, **kwargs):
        r = jobq_tty(*args, **kwargs)
        assert r.styled, r.stdout  # bold headers, colours: jobq saw a terminal
        return r
    return on_a_terminal


@pytest.fixture
def busy_db(db):
    with Queue(db, max_attempts=3) as q:
        q.register_worker(WORKER, host="ip-10-0-1-23.ec2.internal",
                          pid=31337, queues=["billing-emails", "mail"], concurrency=8,
                          beat_interval=10, lease=30)
        for i in range(3):
            q.enqueue("billing.invoice.send_payment_reminder", {"i": i}, queue="billing-emails")
        q.enqueue("billing.invoice.send_monthly_statement", queue=LONG_QUEUE, delay=3600)
        job = q.claim(WORKER)
        q.fail(job.id, job.token, TRACEBACK, retry_in=0)
        q.claim(WORKER)
        q.pause(LONG_QUEUE)
        q.set_limit("billing-emails", concurrency=3)
        registry = Registry()
        for schedule in (registry.periodic("billing.invoice.send_monthly_statements",
                                           cron="0 6 1 * *", tz="America/Argentina/Buenos_Aires",
                                           queue="billing-emails"),
                         registry.periodic("cache.refresh", every=300)):
            q.register_schedule(schedule, since=time.time() - 4000)
        q.enqueue_tick(schedule, schedule.latest_tick(time.time()))
    conn = sqlite3.connect(db)
    conn.execute("UPDATE jobq_jobs SET id=? WHERE id=1", (BIG_ID,))
    conn.execute("UPDATE jobq_attempts SET job_id=? WHERE job_id=1", (BIG_ID,))
    conn.commit()
    conn.close()
    return db


@pytest.mark.parametrize("status", [None, "pending", "retrying", "running"])
def test_list_at_80_columns_shows_every_id_whole_and_statuses_as_words(app_dir, busy_db,
                                                                        status, run):
    args = ["list", "--db", busy_db] + (["--status", status] if status else [])
    r = run(app_dir, *args)
    assert r.returncode == 0, r.stderr
    header, rows = table(r.stdout, "ID")
    assert header[:4] == ["ID", "STATUS", "KIND", "WHEN"]
    expected = {"pending": {str(BIG_ID), "3", "4", "5"}, "retrying": {str(BIG_ID)},
                "running": {"2"}}.get(status, {str(BIG_ID), "2", "3", "4", "5"})
    assert {row[0] for row in rows} == expected  # whole: a cut id would not match
    words = {row[1] for row in rows}
    assert words <= {"○ pending", "↻ retrying", "▶ running", "◷ scheduled"} and words
    assert all(row[2].startswith(("billing.invoice", "cache.refresh")) for row in rows)


def test_list_shows_the_exception_line_of_a_traceback_not_its_first_line(app_dir, busy_db):
    r = jobq(app_dir, "list", "--status", "retrying", "--db", busy_db, columns=200)
    assert "Traceback" not in r.stdout
    assert "RuntimeError: billing API returned HTTP 502 for invoice INV-59476" in r.stdout
    narrow = jobq(app_dir, "list", "--status", "retrying", "--db", busy_db).stdout
    # cut in the middle: the exception type and the end that tells failures apart stay
    assert "Runtime" in narrow and "INV-59476" in narrow


def test_show_at_80_columns_keeps_each_attempts_number_start_and_duration(app_dir, busy_db,
                                                                           run):
    r = run(app_dir, "show", str(BIG_ID), "--db", busy_db)
    assert r.returncode == 0, r.stderr
    assert re.search(rf"^id\s+{BIG_ID}\s*$", r.stdout, re.M) and "↻ retrying" in r.stdout
    header, rows = table(r.stdout, "#")
    assert header[:4] == ["#", "OUTCOME", "STARTED", "TOOK"]
    number, outcome, started, took = rows[0][:4]
    assert (number, outcome) == ("1", "failed") and re.fullmatch(r"\d+s ago", started)
    assert re.fullmatch(r"\d+(ms|s)", took)


def test_workers_at_80_columns_shows_the_whole_id_and_a_state_column(app_dir, busy_db, run):
    r = run(app_dir, "workers", "--db", busy_db)
    assert r.returncode == 0, r.stderr
    header, rows = table(r.stdout, "WORKER")
    assert header[:4] == ["WORKER", "STATE", "LAST SEEN", "BUSY"]
    assert rows[0][:2] == [WORKER, "● ok"]


def test_stats_at_80_columns_shows_every_queue_name_whole(app_dir, busy_db, run):
    r = run(app_dir, "stats", "--db", busy_db)
    assert r.returncode == 0, r.stderr
    header, rows = table(r.stdout, "QUEUE")
    assert header[:3] == ["QUEUE", "PENDING", "RUNNING"]
    assert {row[0] for row in rows} == {"billing-emails", LONG_QUEUE, "default"}


def test_queues_at_80_columns_shows_every_name_whole_and_its_state_as_a_word(app_dir, busy_db,
                                                                             run):
    r = run(app_dir, "queues", "--db", busy_db)
    assert r.returncode == 0, r.stderr
    header, rows = table(r.stdout, "QUEUE")
    assert header[:4] == ["QUEUE", "STATE", "PENDING", "RUNNING"]
    assert {row[0]: row[1] for row in rows} == {"billing-emails": "active", "default": "active",
                                                LONG_QUEUE: "⏸ paused"}
    assert {row[0]: row[3] for row in rows}["billing-emails"] == "1/3"  # under its limit


def test_schedules_at_80_columns_keeps_ticks_whole_and_cuts_text_first(app_dir, busy_db, run):
    r = run(app_dir, "schedules", "--db", busy_db)
    assert r.returncode == 0, r.stderr
    header, rows = table(r.stdout, "KIND")
    assert header[0] == "KIND" and header[-2:] == ["LAST TICK", "IN"]
    by_kind = {row[0]: row for row in rows}
    refresh = by_kind["cache.refresh"]
    assert refresh[2] == "every 300s" and re.fullmatch(r"((\d+m\d\d|\d+)s|\d+ms) ago", refresh[-2])
    # the next multiple of 300 s since the epoch: under a second away once in 300 runs
    assert re.fullmatch(r"(\d+m\d\d|\d+)s|\d+ms", refresh[-1])
    [monthly] = [row for kind, row in by_kind.items() if kind != "cache.refresh"]
    assert monthly[0].startswith("billing.invoice") and monthly[2].startswith("cron 0 6 1 * *")
    assert monthly[-2] == "-" and re.fullmatch(r"\d+d\d\dh", monthly[-1])


def test_bench_at_80_columns_wraps_its_results_and_cuts_nothing(app_dir):
    r = jobq(app_dir, "bench", "--jobs", "50", "--scale-jobs", "100", "--processes", "1",
             "--only", "enqueue,scale,limits")
    assert r.returncode == 0, r.stderr
    lines = lines_fit(r.stdout)
    assert "…" not in r.stdout
    for workload in ("enqueue", "scale_backlog", "scale_history", "limits"):
        assert any(line.split()[:1] == [workload] for line in lines), r.stdout
    # Each column's text, its wrapped lines joined: cells wrap side by side, so reading the
    # lines across would interleave the result and ratio columns.
    head = next(line for line in lines if line.split()[:1] == ["workload"])
    at = head.index("result"), head.index("ratio"), head.index("check")
    limits = next(i for i, line in enumerate(lines) if line.split()[:1] == ["limits"])
    row = [lines[limits]] + list(itertools.takewhile(
        lambda line: line[:at[0]].strip() == "" and line.strip(), lines[limits + 1:]))
    for start, end in zip(at, at[1:]):
        text = " ".join(line[start:end].strip() for line in row)
        assert "with a limit elsewhere" in re.sub(r"\s+", " ", text), r.stdout


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


def test_a_bulk_enqueue_says_which_lines_met_a_live_unique_key(app_dir, db):
    held = jobq(app_dir, "enqueue", "k", '{"v": 1}', "--unique-key", "u1", "--db", db)
    assert held.stdout == "1\n"
    lines = "".join(json.dumps(line) + "\n" for line in [
        {"kind": "k", "payload": {"v": 2}, "unique_key": "u1"},  # held by job 1
        {"kind": "k", "payload": {"v": 3}, "unique_key": "u2"},  # new
        {"kind": "k", "payload": {"v": 4}, "unique_key": "u2"},  # held by the line before
        {"kind": "k", "payload": {"v": 5}}])
    env = {**os.environ, "COLUMNS": "80"}
    r = subprocess.run([sys.executable, "-m", "jobq_cli.main", "enqueue", "--stdin", "--json",
                        "--db", db], cwd=app_dir, env=env, input=lines, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"ids": [1, 2, 2, 3], "count": 4, "existing": [1, 2]}
    assert r.stderr == ("jobq: 2 of 4 lines had the unique key of a live job: that job's id "
                        "is printed for each, and their payloads were not stored\n")
    with Queue(db) as q:
        assert [q.get(i).payload for i in (1, 2, 3)] == [{"v": 1}, {"v": 3}, {"v": 5}]


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


LIVE_APP = '''
import time
from jobq_core import Registry

registry = Registry()

@registry.task("billing.invoice.send_payment_reminder_to_the_customer")
def remind(payload):
    time.sleep(1.5)
'''


@pytest.mark.parametrize("columns", [80, 44])  # 44: a tmux pane split in two
def test_the_workers_live_view_keeps_ids_whole_and_drops_columns_first(app_dir, db, columns):
    """``jobq run`` on a terminal draws its running jobs fitted as ``jobq list`` is: every
    id whole and every drawn line within the terminal (a wider one would wrap, and each
    redraw would leave part of it behind)."""
    (app_dir / "liveapp.py").write_text(LIVE_APP)
    with Queue(db) as q:
        for _ in range(3):
            q.enqueue("billing.invoice.send_payment_reminder_to_the_customer", {})
    conn = sqlite3.connect(db)
    conn.execute("UPDATE jobq_jobs SET id = id + ?", (BIG_ID,))
    conn.commit()
    conn.close()
    r = jobq_tty(app_dir, "run", "--app", "liveapp", "--burst", "--concurrency", "3",
                 "--db", db, columns=columns)
    assert r.returncode == 0 and r.styled, r.stdout
    live = re.sub(r"\x1b\[[0-9;]*m", "", r.raw)
    drawn = re.split(r"\r|\n|\x1b\[\d*[ABGKJ]|\x1b\[\?25[lh]", live)
    assert max(len(segment) for segment in drawn) <= columns, drawn
    rows = [s.split() for s in drawn if len(s.split()) >= 3 and s.split()[0].isdigit()]
    assert {int(r[0]) for r in rows} == {BIG_ID + 1, BIG_ID + 2, BIG_ID + 3}, drawn
    assert all(r[1].startswith("billing.inv") and r[2] == "1/20" for r in rows), rows


def column_at(out: str, name: str, width: int) -> list[str] | None:
    """The cells of ``jobq list``'s column ``name`` (None: not shown), read by position:
    an empty cell leaves no gap to split on. Every line fits ``width``."""
    lines = out.splitlines()
    assert all(len(line) <= width for line in lines), out
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ID "))
    heads = [(m.start(), m.group()) for m in re.finditer(r"\S+(?: \S+)*", lines[at])]
    for k, (start, head) in enumerate(heads):
        if head == name:
            end = heads[k + 1][0] if k + 1 < len(heads) else None
            return [line[start:end].strip() for line in lines[at + 2:] if line.strip()]
    return None


def test_list_cuts_the_free_text_before_a_queue_name(app_dir):
    """At 100 columns a 7-character queue showed as ``defau…`` while the error line beside
    it kept 30 columns: a queue name is cut last, and never below 8 characters."""
    db = str(app_dir / "q.db")
    with Queue(db) as q:
        q.enqueue_many([("email.send_welcome_message", {}) for _ in range(3)])
        q.enqueue("report.build", {}, queue="reports-nightly")
        j = q.claim("vm-4242-ab12-worker", lease=300)
        q.fail(j.id, j.token, "ValueError: the template welcome.html has no block named "
               "footer_links", retry_in=0)
        q.claim("vm-4242-ab12-worker", lease=300)
    for columns in (80, 90, 100, 110, 120):
        r = jobq(app_dir, "list", "--db", db, columns=columns)
        assert r.returncode == 0, r.stderr
        queues = column_at(r.stdout, "QUEUE", columns)
        if queues is None:
            continue
        assert "default" in queues, (columns, r.stdout)
        cut = [name for name in queues if name.endswith("…")]
        assert all(len(name) >= 8 for name in cut), (columns, r.stdout)


def test_a_queue_name_is_cut_only_once_the_kind_and_error_are_at_their_least():
    import random

    from jobq_cli.render import JOB_COLS
    from jobq_cli.tables import fit

    names = [c.header for c in JOB_COLS]
    rand = random.Random(23)
    for _ in range(3000):
        rows = [[str(rand.randint(1, 10**rand.randint(1, 6))), "▶ running",
                 "k" * rand.randint(3, 60), "for 3s", "E" * rand.choice([0, 20, 80]), "1/20",
                 "q" * rand.choice([5, 7, 12, 30]), "w" * rand.choice([0, 14, 20]), "0"]
                for _ in range(rand.randint(1, 4))]
        width = rand.randint(60, 200)
        shown, widths = fit(JOB_COLS, rows, width)
        w = {names[i]: x for i, x in zip(shown, widths)}
        natural = max(len(r[names.index("QUEUE")]) for r in rows)
        if "QUEUE" not in w or w["QUEUE"] >= min(natural, 14):
            continue
        assert w["QUEUE"] >= 8, (width, w)
        longest = {n: max(len(r[names.index(n)]) for r in rows) for n in ("KIND", "ERROR")}
        assert w.get("KIND", 0) <= max(16, min(longest["KIND"], 16)), (width, w)
        if longest["ERROR"]:
            assert w.get("ERROR", 0) <= 24, (width, w)
