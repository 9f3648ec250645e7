"""``jobq enqueue --stdin`` as a real process: a bad line anywhere writes nothing, and after
any interruption stdout lists exactly the jobs stored (issue: partial bulk loads)."""
from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys

import pytest

from jobq_core import Queue

from .conftest import wait_for

pytestmark = pytest.mark.slow  # real processes, some interrupted: seconds each

BATCH = 500


def jobq(app_dir, *args, stdin=""):
    return subprocess.run([sys.executable, "-m", "jobq_cli.main", *args], cwd=app_dir,
                          input=stdin, capture_output=True, text=True, timeout=120)


def lines(n, **extra):
    return "".join(json.dumps({"kind": "k", "payload": i, **extra}) + "\n" for i in range(n))


def stored_ids(db) -> set[int]:
    with Queue(db) as q:
        return {j.id for j in q.list(limit=10**6, payloads=False)}


@pytest.mark.parametrize("bad_line, message", [
    ({"kind": "k", "payload": "x" * (11 * 1024 * 1024)}, "the limit is 10485760 bytes"),
    ({"kind": "k", "priority": 2**64}, "priority must fit in 64 bits"),
    ({"kind": "k", "max_attempts": 2**63}, "max_attempts must fit in 64 bits"),
    ({"kind": "k", "delay": 10**400}, "delay must be a finite number of seconds"),
    ({"kind": "k", "delay": 1e12}, "the job would start after the year 9999"),
    ({"kind": "k", "queue": 7}, "queue must be a non-empty string"),
    ({"kind": "k", "colour": "red"}, "unknown key(s) colour; known: delay, key, kind"),
    ({"kind": "k-\udcff"}, "kind holds a lone surrogate"),
    ({"kind": "k", "queue": "q\udcff"}, "queue holds a lone surrogate"),
    ({"kind": "k", "unique_key": "u\udcff"}, "unique_key holds a lone surrogate"),
    ({"kind": "k\x00"}, "kind holds a NUL"),
    ({"kind": "k" * 256}, "kind must be at most 255 bytes"),
])
def test_a_bad_line_after_several_batches_writes_nothing(app_dir, db, bad_line, message):
    text = lines(3 * BATCH + 1) + json.dumps(bad_line) + "\n"
    r = jobq(app_dir, "enqueue", "--stdin", "--db", db, stdin=text)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith(f"jobq: stdin line {3 * BATCH + 2}: ") and message in r.stderr
    assert r.stderr.count("\n") == 1
    assert stored_ids(db) == set()


def test_a_payload_nested_too_deeply_is_one_line(app_dir, db):
    deep = '{"kind": "k", "payload": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    r = jobq(app_dir, "enqueue", "--stdin", "--db", db, stdin=deep)
    assert (r.returncode, r.stderr) == (1, "jobq: stdin line 1 is nested too deeply to read\n")


def test_ids_are_printed_per_batch_in_order_and_json_mode_prints_one_object_per_batch(
        app_dir, db):
    r = jobq(app_dir, "enqueue", "--stdin", "--db", db, stdin=lines(BATCH + 3))
    assert r.returncode == 0, r.stderr
    assert [int(x) for x in r.stdout.split()] == list(range(1, BATCH + 4))
    r = jobq(app_dir, "enqueue", "--stdin", "--json", "--db", db, stdin=lines(BATCH + 3))
    batches = [json.loads(line) for line in r.stdout.splitlines()]
    assert [b["count"] for b in batches] == [BATCH, 3]
    assert batches[0]["ids"][0] == BATCH + 4 and batches[1]["ids"][-1] == 2 * BATCH + 6


def test_a_line_may_give_run_at_and_overrides_the_delay_option(app_dir, db):
    line = json.dumps({"kind": "k", "run_at": 4102444800}) + "\n"  # 2100-01-01
    r = jobq(app_dir, "enqueue", "--stdin", "--delay", "5", "--db", db, stdin=line)
    assert r.returncode == 0, r.stderr
    with Queue(db) as q:
        assert q.get(int(r.stdout)).run_at == 4102444800


def _load_and_interrupt(app_dir, db, tmp_path, sig):
    source = tmp_path / "jobs.jsonl"
    source.write_text(lines(200_000))
    out = tmp_path / "ids.txt"
    with open(source) as stdin, open(out, "w") as stdout:
        p = subprocess.Popen([sys.executable, "-m", "jobq_cli.main", "enqueue", "--stdin",
                              "--db", db], cwd=app_dir, stdin=stdin, stdout=stdout,
                             stderr=subprocess.PIPE, text=True)
        wait_for(lambda: out.stat().st_size > 20_000, timeout=60)  # a few batches are in
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    printed = [int(x) for x in out.read_text().split()]
    return p.returncode, err, printed


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_load_prints_exactly_the_stored_ids_and_says_how_many(
        app_dir, db, tmp_path, sig):
    rc, err, printed = _load_and_interrupt(app_dir, db, tmp_path, sig)
    assert rc == 130
    assert len(printed) % BATCH == 0 and 0 < len(printed) < 200_000
    assert err == (f"jobq: interrupted: {len(printed)} of 200000 jobs stored, their ids "
                   "printed; the rest were not written\n")
    assert set(printed) == stored_ids(db) and len(set(printed)) == len(printed)


def test_a_killed_load_stored_at_most_one_batch_without_printing_its_ids(app_dir, db,
                                                                         tmp_path):
    rc, _, printed = _load_and_interrupt(app_dir, db, tmp_path, signal.SIGKILL)
    assert rc == -signal.SIGKILL
    stored = stored_ids(db)
    assert set(printed) <= stored
    assert len(stored - set(printed)) <= BATCH


def test_a_failure_part_way_says_how_many_were_stored(app_dir, db):
    # A row another program wrote with the largest id there is: the batch after the
    # first cannot get ids that are both new and never used, so the load stops there.
    assert jobq(app_dir, "enqueue", "first", "--db", db).returncode == 0
    text = lines(BATCH) + lines(BATCH, queue="q2")
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE jobq_jobs SET id = ? WHERE id = 1", (2**63 - BATCH - 1,))
    con.close()
    r = jobq(app_dir, "enqueue", "--stdin", "--db", db, stdin=text)
    assert r.returncode == 1
    printed = [int(x) for x in r.stdout.split()]
    assert printed == list(range(2**63 - BATCH, 2**63))
    assert r.stderr.startswith("jobq: job ids are used up")
    assert r.stderr.endswith(f"({BATCH} of {2 * BATCH} jobs stored, their ids printed before "
                             "it)\n")
    assert stored_ids(db) == {2**63 - BATCH - 1, *printed}


def test_batch_ids_come_from_the_database_when_the_largest_id_is_taken(app_dir, db):
    assert jobq(app_dir, "enqueue", "first", "--db", db).returncode == 0
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE jobq_jobs SET id = ? WHERE id = 1", (2**63 - 1,))
    con.close()
    r = jobq(app_dir, "enqueue", "--stdin", "--db", db, stdin=lines(3))
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("jobq: job ids are used up: the largest id is 9223372036854775807")
    assert stored_ids(db) == {2**63 - 1}
    # One job at a time still gets the id SQLite really gave it.
    r = jobq(app_dir, "enqueue", "one", "--db", db)
    with Queue(db) as q:
        assert q.get(int(r.stdout)).kind == "one"
